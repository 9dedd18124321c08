import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import type { SessionService } from '../sessions/service.js';
import { ToolRegistry } from '../tools/registry.js';
import type { ChatService } from './chat-service.js';
import type { Conversation } from '../conversation/conversation.js';
import { toOpenAITools } from '../models/port.js';
import { primed, turnsJson } from '../events/turns-json.js';
import { countTokens, messagesTokens, TOKENIZER_MODEL } from '../models/tokenizer.js';
import { turnText, type Turn } from '../conversation/turns.js';
import { TurnSchema } from '../events/catalogue.js';
import type { Config } from '../../platform/config/index.js';
import type { Hooks } from './hooks.js';
import type { ModelMessage } from '../models/port.js';
import { contextWindowOf } from '../../platform/config/models.js';
import { SessionParams as Params } from '../sessions/schemas.js';

export interface ChatRouteDeps {
  config: Config;
  sessions: SessionService;
  conversation: Conversation;
  chat: ChatService;
  tools: ToolRegistry;
  hooks: Hooks;
}

const HistoryNode = z.object({
  id: z.string(),
  turn_id: z.string(),
  sequence: z.number().int(),
  role: z.string(),
  kind: z.string(),
  loop_id: z.string(),
  parent_fork_tool_call_id: z.string().nullable(),
  status: z.string(),
  tokens: z.number().int(),
  tool_calls: z.number().int(),
  preview: z.string(),
});
const History = z.object({ nodes: z.array(HistoryNode), system_prompt_tokens: z.number().int(), tools_tokens: z.number().int(), tokenizer_model: z.string() });
const ContextStats = z.object({
  session_id: z.string(),
  model: z.string(),
  context_window: z.number().int(),
  tokenizer_model: z.string(),
  system_prompt_tokens: z.number().int(),
  tools_tokens: z.number().int(),
  messages_tokens: z.number().int(),
  total_tokens: z.number().int(),
  usage_ratio: z.number(),
  turn_count: z.number().int(),
  last_input_tokens: z.number().int(),
  total_output_tokens: z.number().int(),
});

function turnTokens(t: Turn): number {
  return countTokens(turnText(t)) + t.tool_calls.reduce((n, c) => n + countTokens(c.tool_name + c.arguments) + countTokens(c.result ?? ''), 0);
}

export const chatRoutes: FastifyPluginAsyncZod<ChatRouteDeps> = async (app, deps) => {
  const tags = ['chat'];

  const messages = (sessionId: string) => deps.conversation.turns(sessionId);

  app.get('/api/sessions/:session_id/messages', { schema: { tags, params: Params, response: { 200: z.array(TurnSchema) } } }, async (req, reply) => {
    // Its owner's, or a teammate's through a team workspace (docs/identity.md): reading changes nothing.
    await deps.sessions.getReadable(me(req).id, req.params.session_id);
    // Streamed a page of turns at a time (a long session held GiBs and the event loop for seconds);
    // turnsJson writes the schema's serialisation itself (the schema stays for the API document).
    const body = await primed(turnsJson(deps.conversation.turnPages(req.params.session_id)));
    return reply.type('application/json; charset=utf-8').send(body as never);
  });

  /**
   * The system prompt's tokens and those of the tool definitions the session's next model request
   * carries: with tool search (model.tools.preview), what it offers, not every tool registered.
   */
  async function promptCosts(sessionId: string, callerId: string, history: () => Promise<ModelMessage[]> = () => deps.conversation.modelHistory(sessionId)) {
    // A teammate may read it too (docs/identity.md); the prompt and tools counted are its owner's.
    const s = await deps.sessions.getReadable(callerId, sessionId);
    const userId = s.userId;
    const system = await deps.chat.systemPrompt(userId, sessionId, s.mode);
    const all = s.mode === 'planning' ? [] : await deps.tools.forSession({ userId, sessionId }, s.disableTools);
    const messages = all.length && deps.hooks.has('model.tools.preview') ? await history() : [];
    const model = s.model ?? deps.config.model.default;
    const tools = (all.length && (await deps.hooks.call('model.tools.preview', { sessionId, model, messages, tools: all }))) || all;
    return { s, system_prompt_tokens: countTokens(system), tools_tokens: tools.length ? countTokens(JSON.stringify(toOpenAITools(ToolRegistry.specs(tools)))) : 0 };
  }

  app.get('/api/sessions/:session_id/history', { schema: { tags, params: Params, response: { 200: History } } }, async (req) => {
    const costs = await promptCosts(req.params.session_id, me(req).id);
    const nodes = (await messages(req.params.session_id)).map((t) => ({
      id: t.id,
      turn_id: t.turn_id,
      sequence: t.sequence,
      role: t.role,
      kind: t.kind,
      loop_id: t.loop_id,
      parent_fork_tool_call_id: t.parent_fork_tool_call_id,
      status: t.status,
      tokens: turnTokens(t),
      tool_calls: t.tool_calls.length,
      preview: turnText(t).slice(0, 200),
    }));
    return { nodes, system_prompt_tokens: costs.system_prompt_tokens, tools_tokens: costs.tools_tokens, tokenizer_model: TOKENIZER_MODEL };
  });

  app.get('/api/sessions/:session_id/context-stats', { schema: { tags, params: Params, response: { 200: ContextStats } } }, async (req) => {
    // What the model sees: after a compaction, the summary and the kept turns, not the folded ones.
    let history: Promise<ModelMessage[]> | undefined;
    const seen = () => (history ??= deps.conversation.modelHistory(req.params.session_id));
    const { s, system_prompt_tokens, tools_tokens } = await promptCosts(req.params.session_id, me(req).id, seen);
    const turns = (await messages(req.params.session_id)).filter((t) => t.loop_id === 'root');
    const messages_tokens = messagesTokens(await seen());
    const total = system_prompt_tokens + tools_tokens + messages_tokens;
    const assistants = turns.filter((t) => t.role === 'assistant');
    const model = s.model ?? deps.config.model.default;
    const window = contextWindowOf(deps.config.model, model);
    return {
      session_id: s.id,
      model,
      context_window: window,
      tokenizer_model: TOKENIZER_MODEL,
      system_prompt_tokens,
      tools_tokens,
      messages_tokens,
      total_tokens: total,
      usage_ratio: Math.round((total / window) * 10000) / 10000,
      turn_count: turns.length,
      last_input_tokens: assistants.at(-1)?.usage.input_tokens ?? 0,
      total_output_tokens: assistants.reduce((n, t) => n + t.usage.output_tokens, 0),
    };
  });
};
