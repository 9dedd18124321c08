import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { z } from 'zod';
import { AppError, isStorageFull } from '../../platform/server/errors.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { CreateSessionBody, ListQuery } from '../../core/sessions/schemas.js';
import { issues } from '../../core/conversation/send-schema.js';
import type { SessionService } from '../../core/sessions/service.js';
import type { Conversation } from '../../core/conversation/conversation.js';
import { turnText, type Turn } from '../../core/conversation/turns.js';
import type { DoorInput, DoorRuns } from '../doors/follow.js';
import { type Pending, pendingOf } from '../doors/pending.js';
import { conversationMarkdown } from './markdown.js';
import type { McpCalls, McpRequest } from './calls.js';

export interface McpDoorDeps {
  doors: DoorRuns;
  sessions: SessionService;
  conversation: Conversation;
  logger: Logger;
  version: string;
  calls: McpCalls;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const SessionId = z.string().min(1).max(100).describe('an agentsvc session id (sess_...)');

/** What send_message and answer answer: the run's end, its final text, and what it waits for. */
const RunResult = {
  session_id: z.string(),
  status: z.enum(['completed', 'failed', 'interrupted', 'waiting_for_input']),
  finish_reason: z.string(),
  text: z.string().describe("the last assistant turn's text"),
  turn_ids: z.array(z.string()).describe('the user turn (absent for an answer), then the assistant turns of the run'),
  usage: z.object({ input_tokens: z.number(), output_tokens: z.number(), cost: z.number().nullable() }).nullable(),
  pending: z.array(z.record(z.string(), z.unknown())).describe('questions and approvals the run waits for: answer each with the `answer` tool'),
};

/** An error as every agentsvc API answers it, `{detail, code}`, in a tool result the caller's model sees. */
function failure(e: unknown, logger: Logger): CallToolResult {
  let body: { detail: unknown; code: string };
  if (isStorageFull(e)) body = { detail: 'storage is full: nothing was changed; retry once space is freed', code: 'INSUFFICIENT_STORAGE' };
  else if (e instanceof AppError) body = { detail: e.detail, code: e.code };
  else {
    logger.error(errField(e), 'mcp tool failed');
    body = { detail: 'internal error', code: 'INTERNAL' };
  }
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

function ok(structured: Record<string, unknown>, text?: string): CallToolResult {
  const json = JSON.stringify(structured);
  return {
    structuredContent: structured,
    content:
      text === undefined
        ? [{ type: 'text', text: json }]
        : [
            { type: 'text', text },
            { type: 'text', text: json },
          ],
  };
}

const invalid = (e: z.ZodError) => new AppError(422, 'VALIDATION_ERROR', issues(e));

/**
 * The MCP server of one request, for one user (the bearer key's): its tools and the session
 * resources, each a call into the same services the REST API and the socket use. Built per request:
 * the door keeps no MCP session (stateless Streamable HTTP), so any node answers any request.
 */
export function mcpServer(request: McpRequest, deps: McpDoorDeps): McpServer {
  const { userId } = request;
  const server = new McpServer(
    { name: 'agentsvc', version: deps.version },
    {
      capabilities: { tools: {}, resources: {}, logging: {} },
      instructions:
        'agentsvc sessions: conversations with an agent that works in a sandboxed computer. create_session, then send_message; ' +
        'a run that waits for a question or an approval answers `pending`: call `answer` with the session_id and tool_call_id.',
    },
  );
  const guarded =
    <A>(fn: (args: A, extra: Extra) => Promise<CallToolResult>) =>
    async (args: A, extra: Extra) => {
      try {
        return await fn(args, extra);
      } catch (e) {
        return failure(e, deps.logger);
      }
    };

  server.registerTool(
    'list_sessions',
    {
      title: 'List sessions',
      description: 'Your agentsvc sessions, newest first.',
      inputSchema: { limit: z.number().int().min(1).max(100).optional(), offset: z.number().int().min(0).optional(), q: z.string().max(500).optional().describe('text to search') },
      annotations: { readOnlyHint: true },
    },
    guarded(async (args) => {
      const q = ListQuery.safeParse(args);
      if (!q.success) throw invalid(q.error);
      const found = await deps.sessions.list(userId, q.data);
      return ok({ items: found.items, total: found.total });
    }),
  );

  server.registerTool(
    'create_session',
    {
      title: 'Create a session',
      description: 'A new agentsvc session (a conversation with its own workspace). Answers its session_id.',
      inputSchema: { intent: z.string().max(10000).optional(), model: z.string().max(200).optional(), mode: z.enum(['planning', 'executing']).optional() },
      outputSchema: { session_id: z.string() },
    },
    guarded(async (args) => {
      const body = CreateSessionBody.safeParse(args);
      if (!body.success) throw invalid(body.error);
      return ok({ session_id: await deps.sessions.create(userId, body.data) });
    }),
  );

  const drive = async (input: DoorInput, extra: Extra): Promise<CallToolResult> => {
    const token = extra._meta?.progressToken;
    let progress = 0;
    const note = (message: string) => {
      if (token === undefined) return;
      void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } }).catch(() => {});
    };
    const ids: string[] = [];
    let text = '';
    let pending: Pending[] = [];
    // The run stops when the client cancels the call (here, or by notifications/cancelled in a POST
    // of its own: McpCalls) or goes away; not when a revoked credential ended the answer.
    const run = new AbortController();
    const callId = String(extra.requestId);
    request.calls.set(callId, run);
    const gone = () => void (request.revoked.signal.aborted ? undefined : run.abort());
    let onRevoked = () => {};
    const revoked = new Promise<never>((_, reject) => {
      onRevoked = () => reject(new AppError(401, 'UNAUTHORIZED', 'the credential of this request was revoked; the run goes on'));
      if (request.revoked.signal.aborted) onRevoked();
      else request.revoked.signal.addEventListener('abort', onRevoked, { once: true });
    });
    revoked.catch(() => {});
    if (extra.signal.aborted) gone();
    else extra.signal.addEventListener('abort', gone, { once: true });
    try {
      const followed = await deps.doors.start(
        userId,
        input,
        (ev) => {
          const p = ev.payload as Record<string, unknown>;
          if (ev.name === 'turn:patch' && p.patch_type === 'add_content') note((p.data as { text_delta: string }).text_delta);
          else if (ev.name === 'turn:patch' && p.patch_type === 'add_tool_call') {
            const d = p.data as { tool_name: string; status: string };
            note(`[${d.tool_name}: ${d.status === 'awaiting_answer' ? 'waiting for an answer' : 'running'}]`);
          } else if (ev.name === 'turn:patch' && p.patch_type === 'tool_result') note(`[tool ${(p.data as { status: string }).status}]`);
          else if (ev.name === 'turn:end') {
            const turn = p.turn as Turn;
            if (turn.role !== 'assistant' || turn.loop_id !== 'root') return;
            ids.push(turn.turn_id);
            if (turnText(turn)) text = turnText(turn);
            pending = pendingOf(turn);
          } else if (ev.name === 'system:error') note(`[error ${String(p.code)}: ${String(p.message)}]`);
        },
        run.signal,
      );
      if (followed.turnId) ids.unshift(followed.turnId);
      const end = await Promise.race([followed.ended, revoked]);
      const waiting = end.finish_reason === 'tool_question' || end.finish_reason === 'tool_approval';
      const result = {
        session_id: input.session_id,
        status: waiting ? ('waiting_for_input' as const) : end.status,
        finish_reason: end.finish_reason,
        text,
        turn_ids: ids,
        usage: end.usage,
        pending: waiting ? pending : [],
      };
      const shown = waiting
        ? `${text}${text ? '\n\n' : ''}Waiting for input: ${pending.map(describe).join('; ')}. Call \`answer\`.`
        : text || `(run ${end.status}: ${end.finish_reason})`;
      return ok(result, shown);
    } finally {
      request.calls.delete(callId);
      extra.signal.removeEventListener('abort', gone);
      request.revoked.signal.removeEventListener('abort', onRevoked);
    }
  };

  server.registerTool(
    'send_message',
    {
      title: 'Send a message',
      description:
        'Send a message to a session and wait for the run to end; progress notifications carry its text and tool calls while it runs. ' +
        'Answers the final text, the turn ids and usage; a question or an approval ends it with `pending` (answer it with `answer`).',
      inputSchema: { session_id: SessionId, message: z.string().min(1).max(1_000_000) },
      outputSchema: RunResult,
    },
    guarded(async (args, extra) => drive({ session_id: args.session_id, message: args.message }, extra)),
  );

  server.registerTool(
    'answer',
    {
      title: 'Answer a question or an approval',
      description:
        'Answer what a run waits for, then wait for the run to go on to its end (as send_message). For a question, `selections` maps ' +
        'the question index to the chosen option indexes, and `custom` to free text; for an approval, `selections: {"0": [i]}` picks ' +
        'Allow once (0), Allow for this session (1) or Deny (2), and `custom: {"0": "reason"}` gives a reason.',
      inputSchema: {
        session_id: SessionId,
        tool_call_id: z.string().min(1).max(200),
        selections: z.record(z.string(), z.array(z.number().int().min(0))),
        custom: z.record(z.string(), z.string().max(100_000)).optional(),
      },
      outputSchema: RunResult,
    },
    guarded(async (args, extra) =>
      drive({ session_id: args.session_id, message: '', askuser_answer: { tool_call_id: args.tool_call_id, selections: args.selections, custom: args.custom ?? {} } }, extra),
    ),
  );

  server.registerTool(
    'get_messages',
    {
      title: 'Get messages',
      description: "A session's turns (the REST API's Turn projection), the last `limit` of them (default 50).",
      inputSchema: { session_id: SessionId, limit: z.number().int().min(1).max(500).optional() },
      annotations: { readOnlyHint: true },
    },
    guarded(async (args) => {
      await deps.sessions.getOwned(userId, args.session_id);
      const turns = await deps.conversation.turns(args.session_id);
      return ok({ session_id: args.session_id, total: turns.length, messages: turns.slice(-(args.limit ?? 50)) });
    }),
  );

  server.registerResource(
    'session',
    new ResourceTemplate('session://{session_id}', {
      list: async () => {
        const { items } = await deps.sessions.list(userId, ListQuery.parse({ limit: 100 }));
        return { resources: items.map((s) => ({ uri: `session://${s.id}`, name: s.intent?.trim() || s.id, mimeType: 'text/markdown' })) };
      },
    }),
    { title: 'A session', description: 'The conversation of an agentsvc session, as markdown', mimeType: 'text/markdown' },
    async (uri, vars) => {
      const id = String(vars.session_id ?? '');
      // Another user's session reads as one that does not exist (the SDK answers it as a JSON-RPC error).
      const s = await deps.sessions.getOwned(userId, id);
      return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: conversationMarkdown(s.intent, await deps.conversation.turns(id)) }] };
    },
  );
  return server;
}

function describe(p: Pending): string {
  return p.type === 'approval' ? `approval of ${p.tool_name} (tool_call_id ${p.tool_call_id}; options ${p.options.join(', ')})` : `question (tool_call_id ${p.tool_call_id})`;
}
