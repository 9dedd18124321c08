import t from 'tap';
import { readFileSync } from 'node:fs';
import { buildWithModel, createSession, record, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

// A client built from docs/socket-protocol.md alone: its "Shapes" part (a field table and a JSON
// example per event, patch, ack and object) is parsed here, without the catalogue, and every event
// and ack of real runs is checked against it: no field the document does not list, every field it
// requires, each value of a type the table allows and of the kind its example shows. The client
// keeps turns as the document says (turn:start, patches, each turn:end replaces the turn) and must
// end with the turns REST answers. Any disagreement between the document and the server fails.

interface Field {
  types: string[];
  optional: boolean;
}
interface Shape {
  fields: Map<string, Field>;
  open: boolean;
  example: Record<string, unknown>;
}

const doc = readFileSync(new URL('../../docs/socket-protocol.md', import.meta.url), 'utf8');

function parseDoc(text: string): Map<string, Shape> {
  const out = new Map<string, Shape>();
  const re = /^#### (\S+): .*\n\n\| field \| type \| meaning \|\n\|---\|---\|---\|\n((?:\|.*\n)+)\n```json example (\S+)\n([\s\S]*?)\n```/gm;
  for (const m of text.matchAll(re)) {
    const [, id, table, exampleId, json] = m;
    if (id !== exampleId) throw new Error(`shape ${id}: its example is labelled ${exampleId}`);
    const fields = new Map<string, Field>();
    let open = false;
    for (const line of table.trim().split('\n')) {
      const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
      const name = cells[1].replace(/`/g, '');
      if (name === '...') {
        open = true;
        continue;
      }
      const optional = name.endsWith('?');
      fields.set(optional ? name.slice(0, -1) : name, { optional, types: cells[2].replace(/\\\|/g, '|').split(' | ') });
    }
    out.set(id, { fields, open, example: JSON.parse(json) });
  }
  return out;
}

const shapes = parseDoc(doc);
const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function fits(value: unknown, type: string, path: string, errors: string[]): boolean {
  const arr = /^\((.+)\)\[\]$/.exec(type) ?? /^(\S+)\[\]$/.exec(type);
  if (arr) return Array.isArray(value) && value.every((v, i) => fits(v, arr[1], `${path}[${i}]`, errors));
  // A literal: "text", true or false.
  if (type.startsWith('"') || type === 'true' || type === 'false') return value === JSON.parse(type);
  switch (type) {
    case 'string':
    case 'boolean':
    case 'number':
      return typeof value === type;
    case 'integer':
      return Number.isInteger(value);
    case 'null':
      return value === null;
    case 'object':
      return kind(value) === 'object';
    case 'any JSON':
      return true;
  }
  if (!shapes.has(type)) throw new Error(`the document names an unknown type ${type} at ${path}`);
  const before = errors.length;
  check(type, value, path, errors);
  return errors.length === before;
}

/** Errors of `value` against the document's shape `id` (its table and its example). */
function check(id: string, value: unknown, path: string, errors: string[]): void {
  const shape = shapes.get(id);
  if (!shape) return void errors.push(`${path}: the document has no shape ${id}`);
  if (kind(value) !== 'object') return void errors.push(`${path}: not an object`);
  const v = value as Record<string, unknown>;
  for (const k of Object.keys(v)) if (!shape.fields.has(k) && !shape.open) errors.push(`${path}.${k}: a field the document does not list for ${id}`);
  for (const [k, f] of shape.fields) {
    if (!(k in v)) {
      if (!f.optional) errors.push(`${path}.${k}: missing (the document requires it in ${id})`);
      continue;
    }
    const sub: string[] = [];
    if (!f.types.some((type) => fits(v[k], type, `${path}.${k}`, sub))) errors.push(`${path}.${k}: ${JSON.stringify(v[k])?.slice(0, 80)} is not ${f.types.join(' | ')}${sub.length ? ` (${sub.slice(0, 3).join('; ')})` : ''}`);
    const ex = shape.example[k];
    if (ex !== undefined && ex !== null && v[k] !== null && kind(ex) !== kind(v[k])) errors.push(`${path}.${k}: a ${kind(v[k])} where the example shows a ${kind(ex)}`);
  }
  if (id === 'turn:patch' && typeof v.patch_type === 'string') check(`patch:${v.patch_type}`, v.data, `${path}.data`, errors);
}

t.test('the document describes every payload with a table and an example that fit each other', async (t) => {
  const ids = [...shapes.keys()];
  for (const id of ['chat:start', 'turn:start', 'turn:patch', 'turn:end', 'chat:end', 'system:error', 'system:notice', 'session:resync', 'Turn', 'ToolCall', 'Block', 'ack:error'])
    t.ok(ids.includes(id), `${id} is described`);
  for (const p of ['add_content', 'add_thinking', 'add_tool_call', 'update_tool_call', 'tool_result', 'usage']) t.ok(ids.includes(`patch:${p}`), `patch ${p} is described`);
  for (const c of ['session:subscribe', 'session:unsubscribe', 'chat:send', 'chat:stop', 'chat:compact']) t.ok(ids.includes(`ack:${c}`), `the ack of ${c} is described`);
  for (const [id, s] of shapes) {
    const errors: string[] = [];
    check(id, s.example, id, errors);
    t.same(errors, [], `the example of ${id} fits its table`);
  }
  t.notMatch(doc, /SPEC|CONTRACT/, 'no citation of documents the repository does not have');
});

/** The document's client: validates what arrives and keeps the turns as the document says. */
function docClient() {
  const turns = new Map<string, Record<string, any>>();
  const errors: string[] = [];
  const names: string[] = [];
  return {
    turns,
    errors,
    names,
    event(name: string, payload: any) {
      names.push(name === 'turn:patch' ? `turn:patch:${payload.patch_type}` : name);
      check(name, payload, name, errors);
      if (name === 'turn:start') turns.set(payload.turn_id, { turn_id: payload.turn_id, status: payload.status, role: payload.role, text: '' });
      else if (name === 'turn:patch' && payload.patch_type === 'add_content') turns.get(payload.turn_id)!.text += payload.data.text_delta;
      else if (name === 'turn:end') turns.set(payload.turn_id, payload.turn);
      else if (name === 'session:resync') for (const turn of payload.turns) turns.set(turn.turn_id, turn);
    },
    ack(event: string, ack: any) {
      check(ack.ok ? `ack:${event}` : 'ack:error', ack, `ack of ${event}`, errors);
      return ack;
    },
  };
}

t.test('a client built from the document follows real runs: a question and its answer, a stop mid-answer, every ack', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const client = docClient();
  sock.onAny((name, payload) => client.event(name, payload));
  const seen = record(sock);
  const send = async (event: string, payload: unknown) => client.ack(event, await request(sock, event, payload));

  t.match(await send('session:subscribe', { session_id: sid }), { ok: true, session_id: sid });

  // A question: the run pauses; the answer resumes it on the paused turn.
  const question = { questions: [{ question: 'Which color?', options: [{ label: 'red' }, { label: 'blue' }] }] };
  model.script({ reasoning: ['The user should pick.'], text: ['Let me ask.'], toolCalls: [{ name: 'AskUserQuestion', args: question }] });
  const sent = await send('chat:send', { session_id: sid, message: 'pick a color' });
  t.match(sent, { ok: true, turn_id: /^turn_/ });
  await untilEnd(seen, sid);
  const asked = seen.find((e) => e.payload?.patch_type === 'add_tool_call')!.payload;
  t.equal(client.turns.get(asked.turn_id)!.status, 'paused', 'the client sees the turn paused');

  model.script({ text: ['Red it is.'] });
  t.same(await send('chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: asked.data.id, selections: { 0: [0] } } }), { ok: true, turn_id: null });
  await untilEnd(seen, sid, 20_000, 2);
  const afterAnswer = seen.slice(seen.findIndex((e) => e.name === 'chat:end') + 1);
  const resumed = afterAnswer.filter((e) => e.payload?.turn_id === asked.turn_id).map((e) => (e.name === 'turn:patch' ? `turn:patch:${e.payload.patch_type}` : `${e.name}:${e.payload.status}`));
  t.same(resumed, ['turn:patch:tool_result', 'turn:end:completed'], 'after the answer: the result on the paused turn, then its turn:end with its new status');

  // A stop while text streams: the usage counts what streamed.
  model.script({ text: Array.from({ length: 40 }, (_, i) => `word${i} `), delayMs: 100 });
  await send('chat:send', { session_id: sid, message: 'talk a while' });
  await waitFor(() => seen.filter((e) => e.payload?.patch_type === 'add_content' && /word2 /.test(e.payload.data.text_delta)).length > 0 || seen.some((e) => /word2 /.test(e.payload?.data?.text_delta ?? '')), { timeoutMs: 15_000, what: 'streamed text' });
  const stop = await send('chat:stop', { session_id: sid });
  t.match(stop, { ok: true, stopped: true, status: 'interrupted' });
  await untilEnd(seen, sid, 20_000, 3);
  const lastRun = seen.slice(seen.findLastIndex((e) => e.name === 'chat:start'));
  const usage = lastRun.filter((e) => e.payload?.patch_type === 'usage').map((e) => e.payload.data);
  t.equal(usage.length, 1, 'one usage patch for the stopped call');
  t.ok(usage[0]?.output_tokens > 0, `it counts the text that streamed (${JSON.stringify(usage[0])})`);
  t.equal(usage[0]?.estimated, true, 'marked estimated (the provider sent none)');
  const end = lastRun.find((e) => e.name === 'chat:end')!.payload;
  t.match(end, { status: 'interrupted', finish_reason: 'interrupted' });
  t.ok(end.usage?.output_tokens >= usage[0]?.output_tokens, `chat:end's usage includes it (${JSON.stringify(end.usage)})`);

  // The other acks, and a refused event.
  const compact = await send('chat:compact', { session_id: sid });
  t.equal(compact.ok, true, `chat:compact acks ${JSON.stringify(compact)}`);
  if (!('reason' in compact)) await untilEnd(seen, sid, 30_000, 4);
  t.match(await send('chat:send', { session_id: sid, message: 42 }), { ok: false, error: { code: 'VALIDATION_ERROR' } });
  t.match(await send('session:unsubscribe', { session_id: sid }), { ok: true, session_id: sid });
  sock.disconnect();

  t.same(client.errors, [], 'every event and ack fits the document');
  t.ok(client.names.includes('turn:patch:add_thinking') && client.names.includes('turn:patch:tool_result'), 'thinking and results were among them');

  // The client's turns are REST's: same ids, same statuses.
  const rest = (await (await app.api(`/api/sessions/${sid}/messages`)).json()) as { turn_id: string; status: string }[];
  const mine = Object.fromEntries([...client.turns].map(([id, turn]) => [id, turn.status]));
  t.same(mine, Object.fromEntries(rest.map((r) => [r.turn_id, r.status])), 'the document\'s client ends with the turns REST has');
});
