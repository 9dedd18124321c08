import t from 'tap';
import { build, type TestApp } from '../helpers/app.js';

async function create(app: TestApp, json: Record<string, unknown> = {}, key?: string): Promise<string> {
  const res = await app.api('/api/sessions', { method: 'POST', json, key });
  if (res.status !== 200) throw new Error(`create: ${res.status} ${await res.text()}`);
  return (await res.json()).session_id;
}

const sql = (app: TestApp, query: string, params: unknown[] = []) => app.service.db.em().getConnection().execute(query, params);

/** Created `minutesAgo` minutes ago, so the order of the list is known. */
const backdate = (app: TestApp, id: string, minutesAgo: number) =>
  sql(app, `update sessions set created_at = now() - make_interval(mins => ?) where id = ?`, [minutesAgo, id]);

async function addTurn(app: TestApp, sessionId: string, sequence: number, text: string) {
  await sql(app, `insert into turns (id, session_id, sequence, turn_id, role, status, text) values (?, ?, ?, ?, 'assistant', 'completed', ?)`, [
    `entry_${sessionId}_${sequence}`,
    sessionId,
    sequence,
    `turn_${sessionId}_${sequence}`,
    text,
  ]);
}

async function list(app: TestApp, query = '', key?: string) {
  const res = await app.api(`/api/sessions${query}`, { key });
  if (res.status !== 200) throw new Error(`list ${query}: ${res.status} ${await res.text()}`);
  return res.json();
}

t.test('GET /api/sessions', async (t) => {
  const app = await build(t);
  const ids: string[] = [];
  // Oldest first: ids[0] is 30 minutes old, ids[29] the newest.
  for (let i = 0; i < 30; i++) {
    const id = await create(app, { intent: i % 3 === 0 ? `Report ${i} on SALES 100%_done` : `task ${i}`, template_id: i % 2 ? `web/app/${i}` : `cli/${i}` });
    await backdate(app, id, 30 - i);
    ids.push(id);
  }
  const newestFirst = [...ids].reverse();

  t.test('defaults, order, page shape', async (t) => {
    const body = await list(app);
    t.same(Object.keys(body).sort(), ['content_match_truncated', 'items', 'limit', 'offset', 'total']);
    t.equal(body.total, 30);
    t.equal(body.limit, 20);
    t.equal(body.offset, 0);
    t.equal(body.content_match_truncated, false);
    t.same(
      body.items.map((s: { id: string }) => s.id),
      newestFirst.slice(0, 20),
      'newest first',
    );
    const item = body.items[0];
    t.same(Object.keys(item).sort(), [
      'biz_role_id',
      'created_at',
      'id',
      'intent',
      'is_persistent',
      'is_pinned',
      'memory_enabled',
      'mode',
      'model',
      'replay_state',
      'shared',
      'solution_id',
      'status',
      'template_id',
      'updated_at',
      'user_id',
    ]);
  });

  t.test('pagination', async (t) => {
    const seen: string[] = [];
    for (let offset = 0; offset < 30; offset += 7) {
      const page = await list(app, `?limit=7&offset=${offset}`);
      t.equal(page.total, 30);
      t.equal(page.limit, 7);
      t.equal(page.offset, offset);
      seen.push(...page.items.map((s: { id: string }) => s.id));
    }
    t.same(seen, newestFirst, 'pages cover everything once, in order');
    const past = await list(app, '?offset=500');
    t.same(past.items, []);
    t.equal(past.total, 30, 'total is known past the end');
    t.equal((await list(app, '?limit=100')).items.length, 30);
  });

  t.test('q matches the intent, case-insensitively, LIKE characters literally', async (t) => {
    const sales = await list(app, '?q=sales');
    t.same(
      sales.items.map((s: { id: string }) => s.id),
      newestFirst.filter((id) => ids.indexOf(id) % 3 === 0),
    );
    t.equal(sales.total, 10);
    t.equal((await list(app, `?q=${encodeURIComponent('100%_d')}`)).total, 10);
    t.equal((await list(app, `?q=${encodeURIComponent('1_0')}`)).total, 0, '_ is not a wildcard');
    t.equal((await list(app, `?q=${encodeURIComponent('%')}`)).total, 10, '% is not a wildcard');
    t.equal((await list(app, '?q=nothing-like-this')).total, 0);
    t.equal((await list(app, '?q=')).total, 30, 'empty q: no filter');
  });

  t.test('q matches turn content', async (t) => {
    await addTurn(app, ids[1], 0, 'Please deploy the Kubernetes cluster');
    await addTurn(app, ids[1], 1, 'kubernetes is deployed');
    await addTurn(app, ids[4], 0, 'nothing related');
    await addTurn(app, ids[3], 0, 'KUBERNETES also here');
    const found = await list(app, '?q=kubernetes');
    t.same(
      found.items.map((s: { id: string }) => s.id),
      [ids[3], ids[1]],
      'each session once, newest first',
    );
    t.equal(found.total, 2);
    t.equal(found.content_match_truncated, false);
    const both = await list(app, '?q=report%203');
    t.same(
      both.items.map((s: { id: string }) => s.id),
      [ids[3]],
    );
    await addTurn(app, ids[2], 0, 'the report 3 numbers');
    t.same(
      (await list(app, '?q=report%203')).items.map((s: { id: string }) => s.id),
      [ids[3], ids[2]],
      'intent OR content',
    );
    t.same(
      (await list(app, '?q=kubernetes&template_id_prefix=web/')).items.map((s: { id: string }) => s.id),
      [ids[3], ids[1]],
    );
    t.same((await list(app, '?q=kubernetes&template_id_prefix=cli/')).items, []);
  });

  t.test('template_id_prefix', async (t) => {
    const web = await list(app, '?template_id_prefix=web/app/&limit=100');
    t.equal(web.total, 15);
    t.ok(web.items.every((s: { template_id: string }) => s.template_id.startsWith('web/app/')));
    t.equal((await list(app, '?template_id_prefix=cli/1')).total, 5, 'cli/10, cli/12, ... cli/18');
    t.equal((await list(app, `?template_id_prefix=${encodeURIComponent('%')}`)).total, 0);
  });

  t.test('bad query strings: 422 naming the field', async (t) => {
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=101', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=', 'limit'],
      ['offset=-1', 'offset'],
      ['offset=x', 'offset'],
      ['q=a&q=b', 'q'],
      ['q=' + 'x'.repeat(501), 'q'],
      ['q=%00', 'q'],
    ]) {
      const res = await app.api(`/api/sessions?${query}`);
      t.equal(res.status, 422, query.slice(0, 40));
      const body = await res.json();
      t.equal(body.code, 'VALIDATION_ERROR');
      t.ok(JSON.stringify(body.detail).includes(field), `detail names ${field}`);
    }
  });

  t.test("another user's sessions and turns are never listed", async (t) => {
    const bob = await app.newUser();
    t.same(await list(app, '', bob.key), { items: [], total: 0, limit: 20, offset: 0, content_match_truncated: false });
    t.equal((await list(app, '?q=kubernetes', bob.key)).total, 0);
    const bobs = await create(app, { intent: 'bob kubernetes' }, bob.key);
    t.same(
      (await list(app, '', bob.key)).items.map((s: { id: string }) => s.id),
      [bobs],
    );
    t.equal((await list(app, '?q=kubernetes')).total, 2, 'alice still sees only hers');
  });
});

t.test('content search is bounded: content_match_truncated', async (t) => {
  const app = await build(t);
  const old = await create(app, { intent: 'old one' });
  await backdate(app, old, 60);
  await addTurn(app, old, 0, 'needle in an old turn');
  await sql(app, `update turns set started_at = now() - interval '1 hour' where session_id = ?`, [old]);
  const busy = await create(app, { intent: 'busy' });
  await sql(
    app,
    `insert into turns (id, session_id, sequence, turn_id, role, status, text)
     select 'entry_b' || g, ?, g, 'turn_b' || g, 'assistant', 'completed', 'needle ' || g from generate_series(1, 2000) g`,
    [busy],
  );
  const res = await list(app, '?q=needle');
  t.equal(res.content_match_truncated, true, '2001 matching turns: cut');
  t.same(
    res.items.map((s: { id: string }) => s.id),
    [busy],
    'the oldest matching turn fell outside the bound',
  );
  await sql(app, `delete from turns where session_id = ? and sequence = 1`, [busy]);
  const exact = await list(app, '?q=needle');
  t.equal(exact.content_match_truncated, false, '2000 matching turns: all considered');
  t.same(
    exact.items.map((s: { id: string }) => s.id),
    [busy, old],
  );
  t.equal((await list(app)).content_match_truncated, false);
});
