import { z } from 'zod';
import { ChatSend, SessionRef, Subscribe } from '../conversation/send-schema.js';
import type { ClientEventName, LoggedEventName, SessionEventName } from './protocol.js';

/**
 * The server events of the real-time protocol, defined once: the payload each carries (zod), and
 * the line the protocol document says about it. The emitters' types come from here
 * (`ServerEventData`), `test/chat/catalogue.test.ts` checks a real run's events against these
 * schemas, and the "Server events" part of docs/socket-protocol.md is generated from this file
 * (`npm run docs:protocol`; the test fails when the document is stale). Clients read the names and
 * the payload types through protocol.ts (no zod there); the Socket.IO server is typed from it too.
 */

const Block = z.object({ type: z.string(), content: z.string(), tool_call_id: z.string().nullable(), tool_name: z.string().nullable(), display_name: z.string().nullable() });
const ToolCall = z.object({
  id: z.string(),
  tool_name: z.string(),
  display_name: z.string(),
  arguments: z.string(),
  status: z.string(),
  result: z.string().nullable(),
  duration_ms: z.number().int(),
  pending_question_ref: z.union([z.string(), z.object({ type: z.literal('approval'), tool_call_id: z.string() }).passthrough(), z.null()]),
});

/** The Turn projection (SPEC "Turn projection"): REST messages, turn:end, session:resync. */
export const TurnSchema = z.object({
  id: z.string(),
  sequence: z.number().int(),
  turn_id: z.string(),
  loop_id: z.string(),
  kind: z.string(),
  role: z.string(),
  status: z.string(),
  blocks: z.array(Block),
  tool_calls: z.array(ToolCall),
  model: z.string(),
  usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
  duration_ms: z.number().int(),
  started_at: z.string(),
  context_window: z.number().int(),
  memory_refs: z.array(z.unknown()).nullable(),
  parent_fork_tool_call_id: z.string().nullable(),
  deprecated: z.boolean().optional(),
  compaction_id: z.string().nullable(),
  summary_preview: z.string().nullable(),
  summary_full: z.string().nullable(),
  archived_count: z.number().nullable(),
  tokens_before: z.number().nullable(),
  tokens_after: z.number().nullable(),
  saved_ratio: z.number().nullable(),
  trigger: z.string().nullable(),
  failure_reason: z.string().nullable(),
});

interface Entry<S extends z.ZodTypeAny> {
  schema: S;
  /** The payload as the document shows it, and what it means. */
  shown: string;
  doc: string;
}
const entry = <S extends z.ZodTypeAny>(schema: S, shown: string, doc = ''): Entry<S> => ({ schema, shown, doc });

/** `turn:patch.data` by `patch_type`. */
export const PATCHES = {
  add_content: entry(z.object({ text_delta: z.string() }), '{text_delta}', "append to the turn's text"),
  add_thinking: entry(z.object({ text_delta: z.string() }), '{text_delta}', "append to the turn's reasoning"),
  add_tool_call: entry(
    z.object({ id: z.string(), tool_name: z.string(), display_name: z.string(), arguments: z.string(), status: z.enum(['pending', 'awaiting_answer']), question: z.record(z.string(), z.unknown()).optional() }),
    '{id, tool_name, display_name, arguments, status, question?}',
    '`arguments` is a JSON string; `status` `pending`, or `awaiting_answer` for a question or an approval (then `question` is the approval, CONTRACT 15)',
  ),
  update_tool_call: entry(z.object({ id: z.string(), status: z.string(), progress: z.string().optional() }), '{id, status, progress?}', '`progress`: a note from a long tool; `pending` again: an approved call starts running'),
  tool_result: entry(
    z.object({ tool_call_id: z.string(), result: z.string(), status: z.enum(['done', 'error', 'cancelled']), duration_ms: z.number().int() }),
    '{tool_call_id, result, status, duration_ms}',
    '`status` `done`, `error` or `cancelled`',
  ),
  usage: entry(z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }), '{input_tokens, output_tokens}', 'of the model call'),
} as const;

const PatchUnion = z.union(
  Object.entries(PATCHES).map(([type, e]) => z.object({ patch_type: z.literal(type), data: e.schema })) as unknown as [z.ZodTypeAny, z.ZodTypeAny, ...z.ZodTypeAny[]],
);

/** Every server event of a session, without the `session_id` and `seq` the event log adds. */
export const SERVER_EVENTS = {
  'chat:start': entry(z.object({ mode: z.string(), headless: z.boolean() }), '{mode, headless}'),
  'turn:start': entry(
    z.object({ turn_id: z.string(), role: z.string(), status: z.string(), parent_fork_tool_call_id: z.string().nullable() }),
    '{turn_id, role, status, parent_fork_tool_call_id}',
  ),
  'turn:patch': entry(
    // The union is built from PATCHES: its static type is spelled out here.
    z.intersection(z.object({ turn_id: z.string() }), PatchUnion) as unknown as z.ZodType<{ turn_id: string; patch_type: keyof typeof PATCHES; data: unknown }>,
    '{turn_id, patch_type, data}',
    'see Patch types',
  ),
  'turn:end': entry(z.object({ turn_id: z.string(), status: z.string(), turn: TurnSchema }), '{turn_id, status, turn}', '`turn` is the full Turn projection (SPEC "Turn projection")'),
  'chat:end': entry(
    z
      .object({
        status: z.enum(['completed', 'failed', 'interrupted']),
        result: z.unknown(),
        finish_reason: z.string(),
        usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int(), cost: z.number().nullable() }).optional(),
      })
      .passthrough(),
    '{status, result, finish_reason, usage}',
    '`status` `completed`, `failed` or `interrupted`; `finish_reason` `stop`, `tool_question` (paused on AskUserQuestion), `tool_approval` (paused on an approval), `budget`, `limit` (a ceiling on the run\'s seconds or tool calls), `loop` (the same tool call with the same result repeated), `interrupted`, `error`, `max_turns`; `usage {input_tokens, output_tokens, cost}` of the run\'s model calls (sub-agents included; `cost` null when the models have no price)',
  ),
  'system:error': entry(z.object({ code: z.string(), message: z.string() }), '{code, message}', 'a code and a plain message, never internals'),
  'system:notice': entry(z.object({ code: z.string(), message: z.string() }).passthrough(), '{code, message, ...}', 'something to know that ends nothing by itself; `BUDGET_WARNING` (a budget passed 80%, once per period) adds the budget with its use: `scope, period, max_tokens, max_cost, used_tokens, used_cost, resets_at`; `RUN_LIMIT` (the run ends `finish_reason: limit`) adds `limit` (`seconds` or `tool_calls`), `max`, `value`; `LOOP_DETECTED` (the run ends `finish_reason: loop`) adds `tool_name`'),
} as const satisfies Record<LoggedEventName, Entry<z.ZodTypeAny>>;

/** Sent to one socket, outside the session's seq (not logged). */
export const SOCKET_EVENTS = {
  'session:resync': entry(z.object({ session_id: z.string(), seq: z.number().int(), turns: z.array(TurnSchema) }), '{session_id, seq, turns}', 'the whole turn list as of `seq` (see Replay)'),
} as const satisfies Record<Exclude<SessionEventName, LoggedEventName>, Entry<z.ZodTypeAny>>;

/** What clients send (each with an ack), validated by these schemas in src/core/engine/socket.ts. */
export const CLIENT_EVENTS = {
  'session:subscribe': { schema: Subscribe, shown: '{session_id, since_seq?}', ack: '{ok: true}' },
  'session:unsubscribe': { schema: SessionRef, shown: '{session_id}', ack: '{ok: true}' },
  'chat:send': {
    schema: ChatSend,
    shown: '{session_id, message, mode?, whatif?, askuser_answer?, headless?, output_schema?}',
    ack: '{ok: true, turn_id}` (`turn_id` null when answering a question or an approval)',
  },
  'chat:stop': { schema: SessionRef, shown: '{session_id}', ack: '{ok: true}`; the run ends within 2 s' },
  'chat:compact': { schema: SessionRef, shown: '{session_id}', ack: '{ok: true}`; the compaction runs as a chat of its own' },
} as const satisfies Record<ClientEventName, { schema: z.ZodTypeAny; shown: string; ack: string }>;

export type ServerEventName = keyof typeof SERVER_EVENTS;
export type ServerEventData<N extends ServerEventName> = z.input<(typeof SERVER_EVENTS)[N]['schema']>;

/** An event as clients receive it: its payload with `session_id` and `seq`. */
export function parseServerEvent(name: string, payload: unknown): { success: boolean; error?: { message: string } } {
  const e = (SERVER_EVENTS as Record<string, Entry<z.ZodTypeAny>>)[name] ?? (SOCKET_EVENTS as Record<string, Entry<z.ZodTypeAny>>)[name];
  if (!e) return z.never().safeParse(payload);
  const logged = name in SERVER_EVENTS ? z.intersection(z.object({ session_id: z.string(), seq: z.number().int().positive() }), e.schema) : e.schema;
  return logged.safeParse(payload);
}

/** The "Client events" table of docs/socket-protocol.md, from the catalogue. */
export function clientTable(): string {
  return [
    '| event | payload | ack on success |',
    '|---|---|---|',
    // An `ack` may close its code span early to add a note after it.
    ...Object.entries(CLIENT_EVENTS).map(([n, e]) => `| \`${n}\` | \`${e.shown}\` | \`${e.ack}${e.ack.includes('`') ? '' : '`'} |`),
  ].join('\n');
}

/** The "Server events" tables of docs/socket-protocol.md, from the catalogue. */
export function protocolTables(): string {
  const row = (name: string, e: Entry<z.ZodTypeAny>, prefix: string) => {
    const shown = prefix ? e.shown.replace('{', `{${prefix}`) : e.shown;
    return `| \`${name}\` | \`${shown}\`${e.doc ? `: ${e.doc}` : ''} |`;
  };
  return [
    '| event | payload |',
    '|---|---|',
    ...Object.entries(SERVER_EVENTS).map(([n, e]) => row(n, e, 'session_id, seq, ')),
    ...Object.entries(SOCKET_EVENTS).map(([n, e]) => row(n, e, '')),
    '',
    'Patch types (`turn:patch.data`):',
    '',
    '| patch_type | data |',
    '|---|---|',
    ...Object.entries(PATCHES).map(([n, e]) => row(n, e, '')),
  ].join('\n');
}
