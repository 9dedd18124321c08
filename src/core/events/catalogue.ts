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

export const BlockSchema = z.object({
  type: z.string().describe('`text`, `thinking`, `tool_use`, `tool_result` or `image`'),
  content: z.string().describe('the text; a `tool_use` block holds the call\'s arguments (JSON text), a `tool_result` block its result, an `image` block its URL'),
  tool_call_id: z.string().nullable().describe('the call of a `tool_use` or `tool_result` block; null for the others'),
  tool_name: z.string().nullable().describe('as `tool_call_id`'),
  display_name: z.string().nullable().describe('as `tool_call_id`'),
});
export const ToolCallSchema = z.object({
  id: z.string().describe('the call\'s id (`tc_...`): `tool_call_id` of its patches'),
  tool_name: z.string().describe('the tool, e.g. `Bash`, `mcp__server__tool`'),
  display_name: z.string().describe('a name for people'),
  arguments: z.string().describe('the arguments, as JSON text'),
  status: z.string().describe('`pending` (running), `awaiting_answer` (a question or an approval), `done`, `error` or `cancelled`'),
  result: z.string().nullable().describe('the result text; null until the call ends'),
  duration_ms: z.number().int().describe('how long it ran; 0 until it ends'),
  pending_question_ref: z
    .union([z.string(), z.object({ type: z.literal('approval'), tool_call_id: z.string() }).passthrough(), z.null()])
    .describe('what the call waits for: its own id for an AskUserQuestion, an approval object `{type: "approval", tool_call_id, tool_name, arguments, rule, source, options, session_rules}`, null when it waits for nothing'),
});
const ToolCall = ToolCallSchema;
const Block = BlockSchema;

/** The Turn projection: REST messages, turn:end, session:resync (docs/socket-protocol.md, "Shapes"). */
export const TurnSchema = z.object({
  id: z.string().describe('the stored entry\'s id (`entry_...`)'),
  sequence: z.number().int().describe('position in the session, from 0'),
  turn_id: z.string().describe('the turn\'s id (`turn_...`): `turn_id` of its events'),
  loop_id: z.string().describe('`root` for the main conversation; a sub-agent\'s loop otherwise'),
  kind: z.string().describe('`message`, or `compaction` (a summary that replaced earlier turns)'),
  role: z.string().describe('`user`, `assistant` or `system`'),
  status: z.string().describe('`streaming`, `completed`, `paused` (a call waits for an answer), `failed` or `interrupted`'),
  blocks: z.array(Block).describe('the content in order'),
  tool_calls: z.array(ToolCall).describe('the calls the model made in this turn'),
  model: z.string().describe('the model that answered (empty for a user turn before its run)'),
  usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).describe('tokens of the model call that made this turn (0 for user turns)'),
  duration_ms: z.number().int().describe('how long the turn took'),
  started_at: z.string().describe('ISO 8601 time'),
  context_window: z.number().int().describe('the model\'s context window in tokens'),
  memory_refs: z.array(z.unknown()).nullable().describe('memories recalled for this turn, or null'),
  parent_fork_tool_call_id: z.string().nullable().describe('the `Agent` call a sub-agent turn belongs to; null in the main conversation'),
  deprecated: z.boolean().optional().describe('true: left out of what the model sees on this branch (a what-if)'),
  compaction_id: z.string().nullable().describe('compaction turns: its id; null otherwise (as the fields below)'),
  summary_preview: z.string().nullable().describe('compaction: the start of the summary'),
  summary_full: z.string().nullable().describe('compaction: the summary'),
  archived_count: z.number().nullable().describe('compaction: turns it replaced'),
  tokens_before: z.number().nullable().describe('compaction: tokens before'),
  tokens_after: z.number().nullable().describe('compaction: tokens after'),
  saved_ratio: z.number().nullable().describe('compaction: share saved'),
  trigger: z.string().nullable().describe('compaction: `manual` or `auto`'),
  failure_reason: z.string().nullable().describe('compaction: why it failed'),
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
  add_content: entry(z.object({ text_delta: z.string().describe('text to append') }), '{text_delta}', "append to the turn's text"),
  add_thinking: entry(z.object({ text_delta: z.string().describe('reasoning to append') }), '{text_delta}', "append to the turn's reasoning"),
  add_tool_call: entry(
    z.object({
      id: z.string().describe('the new call (`ToolCall.id`)'),
      tool_name: z.string(),
      display_name: z.string(),
      arguments: z.string().describe('JSON text'),
      status: z.enum(['pending', 'awaiting_answer']),
      question: z.record(z.string(), z.unknown()).optional().describe('an approval: the call\'s `pending_question_ref`'),
    }),
    '{id, tool_name, display_name, arguments, status, question?}',
    '`arguments` is a JSON string; `status` `pending`, or `awaiting_answer` for a question or an approval (then `question` is the approval: the call\'s `pending_question_ref`)',
  ),
  update_tool_call: entry(z.object({ id: z.string().describe('the call'), status: z.string().describe('its status now'), progress: z.string().optional().describe('a note from a long tool') }), '{id, status, progress?}', '`progress`: a note from a long tool; `pending` again: an approved call starts running'),
  tool_result: entry(
    z.object({ tool_call_id: z.string().describe('the call'), result: z.string().describe('its result text'), status: z.enum(['done', 'error', 'cancelled']), duration_ms: z.number().int() }),
    '{tool_call_id, result, status, duration_ms}',
    '`status` `done`, `error` or `cancelled`',
  ),
  usage: entry(
    z.object({ input_tokens: z.number().int(), output_tokens: z.number().int(), estimated: z.literal(true).optional().describe('counted by the service, not the provider') }),
    '{input_tokens, output_tokens, estimated?}',
    'of the model call; `estimated: true` when counted by the service\'s tokenizer because the provider sent none (e.g. a run stopped mid-answer: what had streamed)',
  ),
} as const;

const PatchUnion = z.union(
  Object.entries(PATCHES).map(([type, e]) => z.object({ patch_type: z.literal(type), data: e.schema })) as unknown as [z.ZodTypeAny, z.ZodTypeAny, ...z.ZodTypeAny[]],
);

/** Every server event of a session, without the `session_id` and `seq` the event log adds. */
export const SERVER_EVENTS = {
  'chat:start': entry(z.object({ mode: z.string().describe('`executing` or `planning`'), headless: z.boolean().describe('true: no one answers questions or approvals (they fail the call)') }), '{mode, headless}'),
  'turn:start': entry(
    z.object({ turn_id: z.string().describe('the new turn'), role: z.string().describe('`user` or `assistant`'), status: z.string().describe('`streaming` for an assistant turn, `completed` for the user\'s'), parent_fork_tool_call_id: z.string().nullable().describe('the `Agent` call of a sub-agent\'s turn; null in the main conversation') }),
    '{turn_id, role, status, parent_fork_tool_call_id}',
  ),
  'turn:patch': entry(
    // The union is built from PATCHES: its static type is spelled out here.
    z.intersection(z.object({ turn_id: z.string() }), PatchUnion) as unknown as z.ZodType<{ turn_id: string; patch_type: keyof typeof PATCHES; data: unknown }>,
    '{turn_id, patch_type, data}',
    'see Patch types',
  ),
  'turn:end': entry(z.object({ turn_id: z.string().describe('the turn'), status: z.string().describe('`completed`, `paused`, `failed` or `interrupted`'), turn: TurnSchema }), '{turn_id, status, turn}', '`turn` is the whole Turn (see Shapes); a turn paused on a question or an approval ends again once answered, with its new status'),
  'chat:end': entry(
    z
      .object({
        status: z.enum(['completed', 'failed', 'interrupted']).describe('how the run ended'),
        result: z.unknown().describe('a headless run\'s answer (its text, or the JSON of `output_schema`); null otherwise'),
        finish_reason: z.string().describe('why it ended (see the table above)'),
        usage: z
          .object({ input_tokens: z.number().int(), output_tokens: z.number().int(), cost: z.number().nullable() })
          .optional()
          .describe('`{input_tokens, output_tokens, cost}` of the run\'s model calls'),
      })
      .passthrough(),
    '{status, result, finish_reason, usage}',
    '`status` `completed`, `failed` or `interrupted`; `finish_reason` `stop`, `tool_question` (paused on AskUserQuestion), `tool_approval` (paused on an approval), `budget`, `limit` (a ceiling on the run\'s seconds or tool calls), `loop` (the same tool call with the same result repeated), `interrupted`, `error`, `max_turns`; `usage {input_tokens, output_tokens, cost}` of the run\'s model calls (sub-agents included; `cost` null when the models have no price)',
  ),
  'system:error': entry(z.object({ code: z.string().describe('e.g. `MODEL_ERROR`, `MODEL_TIMEOUT`'), message: z.string().describe('for people') }), '{code, message}', 'a code and a plain message, never internals'),
  'system:notice': entry(z.object({ code: z.string().describe('`BUDGET_WARNING`, `RUN_LIMIT`, `LOOP_DETECTED`, ...'), message: z.string().describe('for people') }).passthrough(), '{code, message, ...}', 'something to know that ends nothing by itself; `BUDGET_WARNING` (a budget passed 80%, once per period) adds the budget with its use: `scope, period, max_tokens, max_cost, used_tokens, used_cost, resets_at`; `RUN_LIMIT` (the run ends `finish_reason: limit`) adds `limit` (`seconds` or `tool_calls`), `max`, `value`; `LOOP_DETECTED` (the run ends `finish_reason: loop`) adds `tool_name`; `TOOLS_DEFERRED` (once per run: MCP and integration tools are offered through ToolSearch, docs/tool-search.md) adds `deferred`, `direct` (counts); `TOOL_SEARCH` (a search the model made) adds `query`, `tools` (the names found)'),
} as const satisfies Record<LoggedEventName, Entry<z.ZodTypeAny>>;

/** Sent to one socket, outside the session's seq (not logged). */
export const SOCKET_EVENTS = {
  'session:resync': entry(z.object({ session_id: z.string().describe('the session'), seq: z.number().int().describe('the position the turns are as of: go on from here'), turns: z.array(TurnSchema).describe('every turn') }), '{session_id, seq, turns}', 'the whole turn list as of `seq` (see Replay)'),
  'session:closed': entry(
    z.object({
      session_id: z.string().describe('the session'),
      code: z.string().describe('what a `session:subscribe` would be refused with now: `NOT_FOUND` (deleted, or no longer readable by this user) or `FORBIDDEN`'),
      message: z.string().describe('for people'),
    }),
    '{session_id, code, message}',
    "this socket's subscription to the session has ended and nothing more of it follows: the session was deleted, or its user may no longer read it (they left the team workspace, were removed, or it was deleted; docs/identity.md). The socket stays connected; subscribing again is refused with the same code",
  ),
} as const satisfies Record<Exclude<SessionEventName, LoggedEventName>, Entry<z.ZodTypeAny>>;

/** What clients send (each with an ack), validated by these schemas in src/core/engine/socket.ts; `ackSchema`: the success ack. */
export const CLIENT_EVENTS = {
  'session:subscribe': { schema: Subscribe, shown: '{session_id, since_seq?}', ack: '{ok: true, session_id}', ackSchema: z.object({ ok: z.literal(true), session_id: z.string() }) },
  'session:unsubscribe': { schema: SessionRef, shown: '{session_id}', ack: '{ok: true, session_id}', ackSchema: z.object({ ok: z.literal(true), session_id: z.string() }) },
  'chat:send': {
    schema: ChatSend,
    shown: '{session_id, message, mode?, whatif?, askuser_answer?, headless?, output_schema?}',
    ack: '{ok: true, turn_id}` (`turn_id` null when answering a question or an approval)',
    ackSchema: z.object({ ok: z.literal(true), turn_id: z.string().nullable().describe('the user turn\'s id; null for an answer (no user turn)') }),
  },
  'chat:stop': {
    schema: SessionRef,
    shown: '{session_id}',
    ack: '{ok: true, stopped, status}`; the run ends within 2 s; `stopped` false when no run was going, `status` the session\'s',
    ackSchema: z.object({ ok: z.literal(true), stopped: z.boolean().describe('false: no run was going'), status: z.string().describe('the session\'s status after the stop, e.g. `interrupted`') }),
  },
  'chat:compact': {
    schema: SessionRef,
    shown: '{session_id}',
    ack: '{ok: true, compaction_id?, reason?}`; the compaction runs as a chat of its own; `compaction_id: null` and `reason` when there is nothing to compact',
    ackSchema: z.object({ ok: z.literal(true), compaction_id: z.null().optional().describe('present (null) only when nothing was started'), reason: z.string().optional().describe('why nothing was started') }),
  },
} as const satisfies Record<ClientEventName, { schema: z.ZodTypeAny; shown: string; ack: string; ackSchema: z.ZodTypeAny }>;

/** Every refused client event: `ok: false` and why. */
export const ERROR_ACK = z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }).describe('`code` e.g. `VALIDATION_ERROR`, `NOT_FOUND`, `SESSION_BUSY`; `message` for people') });

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
