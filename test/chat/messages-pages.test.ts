import t from 'tap';
import type { Turn } from '../../src/core/conversation/turns.js';
import { PAGE_TURNS } from '../../src/core/conversation/pages.js';
import { TurnSchema } from '../../src/core/events/catalogue.js';
import { build } from '../helpers/app.js';
import { createSession } from '../helpers/chat.js';
import { storedTurn } from '../helpers/turns.js';

/**
 * GET /api/sessions/{id}/messages streams a page of turns at a time (a 100k-turn session held
 * +2.3 GiB and the event loop for 4 s when read whole) and answers the bytes the whole read did.
 */

const TURNS = PAGE_TURNS * 2 + 17;

const turn = (sequence: number): Turn =>
  storedTurn(`${sequence}`.padStart(6, '0'), sequence, sequence % 2 ? 'assistant' : 'user', `text ${sequence} "quoted" \\ and\nnewline`);

t.test('a long conversation streams page by page with the bytes of the whole read', async (t) => {
  const app = await build(t);
  const sid = await createSession(app, app.adminKey, { intent: 'long' });
  const store = app.service.turns;
  for (let i = 0; i < TURNS; i++) await store.insert(sid, turn(i));
  const expected = `[${(await store.list(sid)).map((s) => JSON.stringify(TurnSchema.parse(s.turn))).join(',')}]`;

  const page0 = store.page.bind(store);
  let reads = 0;
  store.page = (...a) => {
    reads++;
    return page0(...a);
  };
  const res = await app.api(`/api/sessions/${sid}/messages`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  const body = await res.text();
  t.equal(body, expected, `${TURNS} turns, the same bytes as the whole read`);
  t.equal((JSON.parse(body) as Turn[]).length, TURNS);
  t.equal(reads, 3, `three reads of at most ${PAGE_TURNS} turns`);
  t.equal(res.headers.get('content-length'), null, 'streamed, not buffered');
  store.page = page0;

  const empty = await createSession(app, app.adminKey, { intent: 'empty' });
  const none = await app.api(`/api/sessions/${empty}/messages`);
  t.equal(await none.text(), '[]', 'no turns: an empty array');
  const bob = await app.newUser('bob');
  t.equal((await app.api(`/api/sessions/${sid}/messages`, { key: bob.key })).status, 404, "another user's session: 404 as before");
});
