import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CLIENT_EVENTS, clientTable, parseServerEvent, protocolTables, SERVER_EVENTS } from '../../src/core/events/catalogue.js';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

// The event catalogue (src/core/events/catalogue.ts) is what clients get: a real run's events match it,
// and the protocol document's server-event tables are generated from it.

t.test("a run's events (text, thinking, tools, a failing tool, usage) all match the catalogue", async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  app.service.tools.register({ name: 'Fails', description: 'fails', provider: 'builtin', parameters: { type: 'object' }, execute: async () => { throw new Error('no'); } });
  model.script({ reasoning: ['hmm'], text: ['let me'], toolCalls: [{ name: 'Fails', args: {} }, { name: 'Nope', args: {} }] }, { text: ['done'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  const names = new Set(seen.map((e) => e.name));
  for (const n of ['chat:start', 'turn:start', 'turn:patch', 'turn:end', 'chat:end']) t.ok(names.has(n), `saw ${n}`);
  const bad = seen.map((e) => ({ name: e.name, r: parseServerEvent(e.name, e.payload) })).filter((x) => !x.r.success);
  t.same(bad.map((b) => `${b.name}: ${b.r.error?.message}`), [], 'every event matches its schema');
});

t.test('an event the catalogue does not know, or a payload it does not allow, is refused', async (t) => {
  t.notOk(parseServerEvent('chat:whatever', { session_id: 's', seq: 1 }).success);
  t.notOk(parseServerEvent('chat:end', { session_id: 's', seq: 1, status: 'maybe', result: null, finish_reason: 'stop' }).success);
  t.notOk(parseServerEvent('turn:patch', { session_id: 's', seq: 1, turn_id: 't', patch_type: 'add_content', data: {} }).success);
  t.ok(parseServerEvent('turn:patch', { session_id: 's', seq: 1, turn_id: 't', patch_type: 'add_content', data: { text_delta: 'x' } }).success);
});

t.test('docs/socket-protocol.md carries the tables generated from the catalogue (npm run docs:protocol)', async (t) => {
  const doc = readFileSync(new URL('../../docs/socket-protocol.md', import.meta.url), 'utf8');
  t.ok(doc.includes(protocolTables()), 'the server events part is current');
  t.ok(doc.includes(clientTable()), 'the client events part is current');
  for (const name of Object.keys(SERVER_EVENTS)) t.ok(doc.includes(`| \`${name}\``), `${name} documented`);
});

t.test('the sockets handle exactly the client events of the catalogue', async (t) => {
  // The chat handlers (core/engine/socket.ts `handle`), and any module's own command through
  // socketCommands (chat:compact in features/compaction/module.ts).
  const files = readdirSync(new URL('../../src', import.meta.url), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const handled = files.flatMap((f) => {
    const src = readFileSync(new URL(`../../src/${f}`, import.meta.url), 'utf8');
    const own = f === join('core', 'engine', 'socket.ts') ? [...src.matchAll(/handle\('([a-z]+:[a-z]+)'/g)] : [];
    return [...own, ...src.matchAll(/socketCommands\([^)]*\)\('([a-z]+:[a-z]+)'/g)].map((m) => m[1]);
  });
  t.same(handled.sort(), Object.keys(CLIENT_EVENTS).sort());
});

t.test("the document's Shapes part is current, and each of its examples passes its schema", async (t) => {
  const { shapes, shapesDoc, EXAMPLES } = await import('../../src/core/events/protocol-shapes.js');
  const doc = readFileSync(new URL('../../docs/socket-protocol.md', import.meta.url), 'utf8');
  t.ok(doc.includes(shapesDoc()), 'the shapes part is current (npm run docs:protocol)');
  for (const s of shapes()) {
    const r = s.schema.safeParse(EXAMPLES[s.id]);
    t.ok(r.success, `the example of ${s.id} passes its schema${r.success ? '' : `: ${r.error.message}`}`);
  }
});
