import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TOKENIZER_MODEL } from '../../core/models/tokenizer.js';
import { text } from '../../platform/lib/storable.js';
import type { CountMessage } from './count.js';
import { TokenCounter } from './off-thread.js';

/**
 * POST /api/sessions/tokenize/{prompt,messages} (docs/time-travel.md): the tokenizer `/history` uses
 * (o200k_base), with the chat template's overhead (count.ts), plus 3 tokens for the assistant's
 * reply when `add_generation_prompt`. Large bodies are counted in a worker thread (off-thread.ts):
 * no request holds the event loop for long, whatever its text.
 */

const REPLY = 3;

const Part = z.union([
  z.object({ type: z.literal('text'), text: text(1_000_000) }).passthrough(),
  z.object({ type: z.literal('image_url'), image_url: z.unknown() }).passthrough(),
]);
const Message = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: z.union([text(5_000_000), z.array(Part).max(1000), z.null()]),
    name: text(200).optional(),
    tool_calls: z.array(z.unknown()).max(1000).optional(),
    tool_call_id: text(200).optional(),
  })
  .strict();

const Model = text(200, 1).optional();

export const tokenizeRoutes: FastifyPluginAsyncZod<{ defaultModel: string }> = async (app, { defaultModel }) => {
  const tags = ['sessions'];
  const counter = new TokenCounter();
  app.addHook('onClose', () => counter.close());
  app.post(
    '/api/sessions/tokenize/prompt',
    {
      schema: {
        tags,
        body: z.object({ prompt: text(5_000_000), model: Model }).strict(),
        response: { 200: z.object({ token_count: z.number().int(), model: z.string(), tokenizer: z.string() }) },
      },
    },
    async (req) => ({ token_count: (await counter.count({ kind: 'prompt', prompt: req.body.prompt })).tokens, model: req.body.model ?? defaultModel, tokenizer: TOKENIZER_MODEL }),
  );
  app.post(
    '/api/sessions/tokenize/messages',
    {
      schema: {
        tags,
        body: z
          .object({
            messages: z.array(Message).max(10_000),
            model: Model,
            add_generation_prompt: z.boolean().default(true),
            enable_thinking: z.boolean().optional(),
            tools: z.array(z.record(z.string(), z.unknown())).max(1000).optional(),
          })
          .strict(),
        response: { 200: z.object({ token_count: z.number().int(), model: z.string(), tokenizer: z.string(), per_message: z.array(z.number().int()) }) },
      },
    },
    async (req) => {
      const { per_message, tokens } = await counter.count({ kind: 'messages', messages: req.body.messages as CountMessage[], tools: req.body.tools });
      const total = per_message.reduce((a, b) => a + b, 0) + (req.body.add_generation_prompt ? REPLY : 0) + tokens;
      return { token_count: total, model: req.body.model ?? defaultModel, tokenizer: TOKENIZER_MODEL, per_message };
    },
  );
};
