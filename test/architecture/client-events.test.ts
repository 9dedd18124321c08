import { readFileSync } from 'node:fs';
import t from 'tap';
import { Renderer } from '../../src/cli/terminal/render.js';
import { CLIENT_EVENTS, SERVER_EVENTS, SOCKET_EVENTS } from '../../src/core/events/catalogue.js';
import { CLIENT_EVENT_NAMES, isSessionEvent, SESSION_EVENTS } from '../../src/core/events/protocol.js';
import { ChatModel } from '../../web/src/chat-model.js';

/**
 * One event catalogue for every client (issue #41): the server events the terminal client and the
 * web console handle are exactly the session events of the catalogue (src/core/events/catalogue.ts),
 * read from the handler map each client keeps by event name, and the names clients import
 * (src/core/events/protocol.ts) are the catalogue's.
 */

const catalogued = [...Object.keys(SERVER_EVENTS), ...Object.keys(SOCKET_EVENTS)].sort();

t.test('the names clients import are the catalogue', async (t) => {
  t.same([...SESSION_EVENTS].sort(), catalogued, 'session events');
  t.same([...CLIENT_EVENT_NAMES].sort(), Object.keys(CLIENT_EVENTS).sort(), 'client events');
  t.equal(catalogued.includes('system:notice'), true, 'system:notice is one of them');
  t.same(catalogued.filter((n) => !isSessionEvent(n)), [], 'isSessionEvent knows each');
  t.equal(isSessionEvent('chat:whatever'), false);
});

t.test('the terminal client handles exactly the catalogue session events', async (t) => {
  t.same(Object.keys(Renderer.handlers).sort(), catalogued);
});

t.test('the web console handles exactly the catalogue session events', async (t) => {
  t.same(Object.keys(ChatModel.handlers).sort(), catalogued);
});

t.test('what the console bundles from the protocol module is the names list alone (no schema, no zod)', async (t) => {
  const src = readFileSync(new URL('../../src/core/events/protocol.ts', import.meta.url), 'utf8');
  const imports = [...src.matchAll(/^import .*$/gm)].map((m) => m[0]);
  t.same(
    imports.filter((l) => !l.startsWith('import type ')),
    [],
    'type-only imports, erased when compiled',
  );
});

t.test('the Socket.IO types are typed, not any', async (t) => {
  for (const f of ['../../src/platform/server/socket-types.ts', '../../src/core/events/sockets.ts']) {
    const code = readFileSync(new URL(f, import.meta.url), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    t.notMatch(code, /\bany\b/, f);
  }
});
