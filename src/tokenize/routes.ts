import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { countTokens, TOKENIZER_MODEL } from '../chat/tokens.js';
import { text } from '../lib/storable.js';

/**
 * POST /api/sessions/tokenize/{prompt,messages} (CONTRACT 8): the tokenizer `/history` uses
 * (o200k_base). Messages are counted as a chat template renders them: 3 tokens of framing per
 * message plus its role and content (plus 1 and the name when named), 3 for the assistant's reply
 * when `add_generation_prompt`, and the tools' JSON when given. An image part counts 85 tokens
 * (a low-detail image; providers count high-detail images by tiles, which the URL alone cannot tell).
 */

const PER_MESSAGE = 3;
const PER_NAME = 1;
const REPLY = 3;
const IMAGE = 85;

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

function messageTokens(m: z.infer<typeof Message>): number {
  let n = PER_MESSAGE + countTokens(m.role);
  if (typeof m.content === 'string') n += countTokens(m.content);
  else if (Array.isArray(m.content)) for (const p of m.content) n += p.type === 'text' ? countTokens(String(p.text)) : IMAGE;
  if (m.name) n += PER_NAME + countTokens(m.name);
  if (m.tool_calls?.length) n += countTokens(JSON.stringify(m.tool_calls));
  if (m.tool_call_id) n += countTokens(m.tool_call_id);
  return n;
}

export const tokenizeRoutes: FastifyPluginAsyncZod<{ defaultModel: string }> = async (app, { defaultModel }) => {
  const tags = ['sessions'];
  app.post(
    '/api/sessions/tokenize/prompt',
    {
      schema: {
        tags,
        body: z.object({ prompt: text(5_000_000), model: Model }).strict(),
        response: { 200: z.object({ token_count: z.number().int(), model: z.string(), tokenizer: z.string() }) },
      },
    },
    async (req) => ({ token_count: countTokens(req.body.prompt), model: req.body.model ?? defaultModel, tokenizer: TOKENIZER_MODEL }),
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
      const per_message = req.body.messages.map(messageTokens);
      const tools = req.body.tools?.length ? countTokens(JSON.stringify(req.body.tools)) : 0;
      const total = per_message.reduce((a, b) => a + b, 0) + (req.body.add_generation_prompt ? REPLY : 0) + tools;
      return { token_count: total, model: req.body.model ?? defaultModel, tokenizer: TOKENIZER_MODEL, per_message };
    },
  );
};
