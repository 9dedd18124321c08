import { z } from 'zod';
import { BlockSchema, CLIENT_EVENTS, ERROR_ACK, PATCHES, SERVER_EVENTS, SOCKET_EVENTS, ToolCallSchema, TurnSchema } from './catalogue.js';

/**
 * The "Shapes" part of docs/socket-protocol.md (`npm run docs:protocol`): for every server event,
 * patch, ack and the Turn, ToolCall and Block objects, a table of its fields (name, type, meaning;
 * `?` marks a field that may be absent) rendered from the catalogue's schemas, and a JSON example.
 * test/server/protocol-doc.test.ts builds a client from these tables and examples alone and checks a
 * real run's events and acks against them; test/chat/catalogue.test.ts checks each example against
 * its schema.
 */

const NAMES = new Map<unknown, string>([
  [TurnSchema, 'Turn'],
  [ToolCallSchema, 'ToolCall'],
  [BlockSchema, 'Block'],
]);

type Def = { type: string; [k: string]: unknown };
const defOf = (s: z.ZodTypeAny): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** A field's type as the tables write it: `string`, `integer`, `Turn[]`, `string | null`, `"a" | "b"`, `object`, `any JSON`. */
export function typeText(s: z.ZodTypeAny): string {
  const named = NAMES.get(s);
  if (named) return named;
  const d = defOf(s);
  switch (d.type) {
    case 'string':
      return 'string';
    case 'number':
      return (s as z.ZodNumber).isInt ? 'integer' : 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'nullable':
      return `${typeText(d.innerType as z.ZodTypeAny)} | null`;
    case 'optional':
    case 'default':
      return typeText(d.innerType as z.ZodTypeAny);
    case 'array': {
      const el = typeText(d.element as z.ZodTypeAny);
      return el.includes(' ') ? `(${el})[]` : `${el}[]`;
    }
    case 'literal':
      return (d.values as unknown[]).map((v) => JSON.stringify(v)).join(' | ');
    case 'enum':
      return Object.values(d.entries as Record<string, unknown>)
        .map((v) => JSON.stringify(v))
        .join(' | ');
    case 'union':
      return (d.options as z.ZodTypeAny[]).map(typeText).join(' | ');
    case 'object':
    case 'record':
      return 'object';
    default:
      return 'any JSON';
  }
}

const optional = (s: z.ZodTypeAny) => defOf(s).type === 'optional';
const shapeOf = (s: z.ZodTypeAny) => (defOf(s).type === 'object' ? (defOf(s).shape as Record<string, z.ZodTypeAny>) : null);
const opensUp = (s: z.ZodTypeAny) => {
  const c = defOf(s).catchall as z.ZodTypeAny | undefined;
  return !!c && defOf(c).type !== 'never';
};

interface Row {
  field: string;
  type: string;
  optional: boolean;
  meaning: string;
}

function rows(schema: z.ZodTypeAny, prefix: Row[] = []): Row[] {
  const shape = shapeOf(schema);
  if (!shape) throw new Error('a shape of the protocol document must be an object');
  const out = [...prefix];
  for (const [field, s] of Object.entries(shape)) out.push({ field, type: typeText(s), optional: optional(s), meaning: s.description ?? '' });
  if (opensUp(schema)) out.push({ field: '...', type: 'any JSON', optional: true, meaning: 'more fields (see the event)' });
  return out;
}

const LOGGED: Row[] = [
  { field: 'session_id', type: 'string', optional: false, meaning: 'the session' },
  { field: 'seq', type: 'integer', optional: false, meaning: 'the event\'s position in the session, +1 per event from 1' },
];

/** Realistic payloads, one per shape (checked against the schemas by test/chat/catalogue.test.ts). */
const call = {
  id: 'tc_7Qm2xk4Lr9Vn1Bc8Zp3D',
  tool_name: 'Bash',
  display_name: 'Bash',
  arguments: '{"command":"ls"}',
  status: 'done',
  result: 'README.md\nsrc\n',
  duration_ms: 41,
  pending_question_ref: null,
};
const turn = {
  id: 'entry_3Fh8Kd2Ws9Lq6Tx1Yb4N',
  sequence: 1,
  turn_id: 'turn_9Gp4Rz7Vc2Mx5Hk8Ja1Q',
  loop_id: 'root',
  kind: 'message',
  role: 'assistant',
  status: 'completed',
  blocks: [
    { type: 'text', content: 'Let me look.', tool_call_id: null, tool_name: null, display_name: null },
    { type: 'tool_use', content: '{"command":"ls"}', tool_call_id: call.id, tool_name: 'Bash', display_name: 'Bash' },
    { type: 'tool_result', content: 'README.md\nsrc\n', tool_call_id: call.id, tool_name: 'Bash', display_name: 'Bash' },
  ],
  tool_calls: [call],
  model: 'gpt-4o-mini',
  usage: { input_tokens: 812, output_tokens: 41 },
  duration_ms: 2310,
  started_at: '2026-11-27T10:00:00.000Z',
  context_window: 128000,
  memory_refs: null,
  parent_fork_tool_call_id: null,
  compaction_id: null,
  summary_preview: null,
  summary_full: null,
  archived_count: null,
  tokens_before: null,
  tokens_after: null,
  saved_ratio: null,
  trigger: null,
  failure_reason: null,
};
const at = { session_id: 'sess_2Wd7Np4Kx9Qs1Lm6Vb3R' };

export const EXAMPLES: Record<string, unknown> = {
  'chat:start': { ...at, seq: 1, mode: 'executing', headless: false },
  'turn:start': { ...at, seq: 4, turn_id: turn.turn_id, role: 'assistant', status: 'streaming', parent_fork_tool_call_id: null },
  'turn:patch': { ...at, seq: 5, turn_id: turn.turn_id, patch_type: 'add_content', data: { text_delta: 'Let me look.' } },
  'turn:end': { ...at, seq: 12, turn_id: turn.turn_id, status: 'completed', turn },
  'chat:end': { ...at, seq: 20, status: 'completed', result: null, finish_reason: 'stop', usage: { input_tokens: 1650, output_tokens: 88, cost: null } },
  'system:error': { ...at, seq: 7, code: 'MODEL_ERROR', message: 'model endpoint http://127.0.0.1:8000 answered 500' },
  'system:notice': { ...at, seq: 9, code: 'LOOP_DETECTED', message: 'the same tool call returned the same result 3 times', tool_name: 'Bash' },
  'session:resync': { ...at, seq: 311, turns: [turn] },
  'session:closed': { ...at, code: 'NOT_FOUND', message: 'session not found' },
  'patch:add_content': { text_delta: 'Let me look.' },
  'patch:add_thinking': { text_delta: 'The user wants the files.' },
  'patch:add_tool_call': { id: call.id, tool_name: 'Bash', display_name: 'Bash', arguments: '{"command":"ls"}', status: 'pending' },
  'patch:update_tool_call': { id: call.id, status: 'pending', progress: 'Fetching https://example.com' },
  'patch:tool_result': { tool_call_id: call.id, result: 'README.md\nsrc\n', status: 'done', duration_ms: 41 },
  'patch:usage': { input_tokens: 812, output_tokens: 41 },
  'ack:session:subscribe': { ok: true, session_id: at.session_id },
  'ack:session:unsubscribe': { ok: true, session_id: at.session_id },
  'ack:chat:send': { ok: true, turn_id: 'turn_5Kd8Wq2Zx7Nc4Rv1Hm9T' },
  'ack:chat:stop': { ok: true, stopped: true, status: 'interrupted' },
  'ack:chat:compact': { ok: true },
  'ack:error': { ok: false, error: { code: 'SESSION_BUSY', message: 'the session is running; wait for chat:end or send chat:stop' } },
  Turn: turn,
  ToolCall: call,
  Block: turn.blocks[0],
};

/** Every shape of the document: its id, heading text, field rows and schema (for the example's check). */
export function shapes(): { id: string; title: string; rows: Row[]; schema: z.ZodTypeAny }[] {
  const out: { id: string; title: string; rows: Row[]; schema: z.ZodTypeAny }[] = [];
  for (const [name, e] of Object.entries(SERVER_EVENTS)) {
    const schema = z.intersection(z.object({ session_id: z.string(), seq: z.number().int() }), e.schema);
    const r =
      name === 'turn:patch'
        ? [
            ...LOGGED,
            { field: 'turn_id', type: 'string', optional: false, meaning: 'the turn it changes' },
            { field: 'patch_type', type: Object.keys(PATCHES).map((k) => JSON.stringify(k)).join(' | '), optional: false, meaning: 'what `data` is' },
            { field: 'data', type: 'object', optional: false, meaning: 'the `patch:<patch_type>` shape below' },
          ]
        : rows(e.schema, LOGGED);
    out.push({ id: name, title: `\`${name}\` (server event)`, rows: r, schema });
  }
  for (const [name, e] of Object.entries(SOCKET_EVENTS)) out.push({ id: name, title: `\`${name}\` (server event, this socket only, no seq of its own)`, rows: rows(e.schema), schema: e.schema });
  for (const [name, e] of Object.entries(PATCHES)) out.push({ id: `patch:${name}`, title: `\`turn:patch\` data of \`${name}\``, rows: rows(e.schema), schema: e.schema });
  for (const [name, e] of Object.entries(CLIENT_EVENTS)) out.push({ id: `ack:${name}`, title: `ack of \`${name}\``, rows: rows(e.ackSchema), schema: e.ackSchema });
  out.push({ id: 'ack:error', title: 'ack of any refused client event', rows: rows(ERROR_ACK), schema: ERROR_ACK });
  out.push({ id: 'Turn', title: 'Turn (REST `GET /api/sessions/{session_id}/messages`, `turn:end.turn`, `session:resync.turns`)', rows: rows(TurnSchema), schema: TurnSchema });
  out.push({ id: 'ToolCall', title: 'ToolCall (`Turn.tool_calls`)', rows: rows(ToolCallSchema), schema: ToolCallSchema });
  out.push({ id: 'Block', title: 'Block (`Turn.blocks`)', rows: rows(BlockSchema), schema: BlockSchema });
  return out;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The generated "Shapes" part of docs/socket-protocol.md. */
export function shapesDoc(): string {
  return shapes()
    .map((s) =>
      [
        `#### ${s.id}: ${s.title}`,
        '',
        '| field | type | meaning |',
        '|---|---|---|',
        ...s.rows.map((r) => `| \`${r.field}${r.optional && r.field !== '...' ? '?' : ''}\` | ${cell(r.type)} | ${cell(r.meaning)} |`),
        '',
        `\`\`\`json example ${s.id}`,
        JSON.stringify(EXAMPLES[s.id], null, 2),
        '```',
      ].join('\n'),
    )
    .join('\n\n');
}
