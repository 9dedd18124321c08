import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sessionHostDir } from '../../src/core/files/paths.js';
import { build, type TestApp } from '../helpers/app.js';

async function create(app: TestApp, json: Record<string, unknown> = {}, key?: string): Promise<string> {
  const res = await app.api('/api/sessions', { method: 'POST', json, key });
  if (res.status !== 200) throw new Error(`create: ${res.status} ${await res.text()}`);
  return (await res.json()).session_id;
}

const sql = <R extends Record<string, unknown>[] = Record<string, unknown>[]>(app: TestApp, query: string, params: unknown[] = []) =>
  app.service.db.em().getConnection().execute<R>(query, params);

async function count(app: TestApp, table: 'turns' | 'session_events' | 'sessions', sessionId: string): Promise<number> {
  const col = table === 'sessions' ? 'id' : 'session_id';
  const [row] = await sql<{ n: number }[]>(app, `select count(*)::int as n from ${table} where ${col} = ?`, [sessionId]);
  return row.n;
}

async function seedRows(app: TestApp, sessionId: string) {
  for (const seq of [0, 1]) {
    await sql(app, `insert into turns (id, session_id, sequence, turn_id, role, status, text) values (?, ?, ?, ?, 'user', 'completed', 'hi')`, [
      `entry_${seq}_${sessionId}`,
      sessionId,
      seq,
      `turn_${seq}_${sessionId}`,
    ]);
    await sql(app, `insert into session_events (session_id, seq, name, payload) values (?, ?, 'turn:end', '{}')`, [sessionId, seq + 1]);
  }
}

t.test('DELETE /api/sessions/{id}', async (t) => {
  const app = await build(t);
  const me = await (await app.api('/api/auth/me')).json();
  const outside = mkdtempSync(join(tmpdir(), 'agentsvc-outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  writeFileSync(join(outside, 'precious.txt'), 'keep me');

  t.test('removes the row, its turns and events, and its folder', async (t) => {
    const id = await create(app, { intent: 'doomed' });
    const keep = await create(app, { intent: 'kept' });
    await seedRows(app, id);
    await seedRows(app, keep);
    const dir = sessionHostDir(app.home, me.id, id);
    mkdirSync(join(dir, 'src', 'deep'), { recursive: true });
    writeFileSync(join(dir, 'src', 'deep', 'a.txt'), 'a');
    symlinkSync(outside, join(dir, 'link-out'));
    symlinkSync(join(outside, 'precious.txt'), join(dir, 'src', 'file-link'));
    const keepDir = sessionHostDir(app.home, me.id, keep);
    mkdirSync(keepDir, { recursive: true });

    const res = await app.api(`/api/sessions/${id}`, { method: 'DELETE' });
    t.equal(res.status, 200);
    t.same(await res.json(), { deleted: true });
    t.equal(await count(app, 'sessions', id), 0);
    t.equal(await count(app, 'turns', id), 0, 'turns cascade');
    t.equal(await count(app, 'session_events', id), 0, 'events cascade');
    t.notOk(existsSync(dir), 'folder removed');
    t.equal(readFileSync(join(outside, 'precious.txt'), 'utf8'), 'keep me', 'symlink targets outside are untouched');
    t.equal(await count(app, 'turns', keep), 2, 'other sessions keep their rows');
    t.ok(existsSync(keepDir), 'and their folders');

    t.equal((await app.api(`/api/sessions/${id}`)).status, 404);
    const again = await app.api(`/api/sessions/${id}`, { method: 'DELETE' });
    t.equal(again.status, 404);
    t.equal((await again.json()).code, 'NOT_FOUND');
  });

  t.test('a session without a folder, and one whose folder is a symlink', async (t) => {
    const none = await create(app);
    t.same(await (await app.api(`/api/sessions/${none}`, { method: 'DELETE' })).json(), { deleted: true });

    const linked = await create(app);
    const dir = sessionHostDir(app.home, me.id, linked);
    mkdirSync(join(dir, '..'), { recursive: true });
    symlinkSync(outside, dir);
    t.same(await (await app.api(`/api/sessions/${linked}`, { method: 'DELETE' })).json(), { deleted: true });
    t.notOk(existsSync(dir), 'the link is gone');
    t.equal(readFileSync(join(outside, 'precious.txt'), 'utf8'), 'keep me', 'its target is not');
  });

  t.test('a running session is refused with 409 SESSION_BUSY', async (t) => {
    const id = await create(app);
    await seedRows(app, id);
    const dir = sessionHostDir(app.home, me.id, id);
    mkdirSync(dir, { recursive: true });
    await sql(app, `update sessions set status = 'running' where id = ?`, [id]);
    const res = await app.api(`/api/sessions/${id}`, { method: 'DELETE' });
    t.equal(res.status, 409);
    t.equal((await res.json()).code, 'SESSION_BUSY');
    t.equal(await count(app, 'sessions', id), 1);
    t.equal(await count(app, 'turns', id), 2);
    t.ok(existsSync(dir), 'folder kept');

    await sql(app, `update sessions set status = 'waiting_for_input' where id = ?`, [id]);
    t.equal((await app.api(`/api/sessions/${id}`, { method: 'DELETE' })).status, 200, 'a session waiting for an answer can go');
    t.notOk(existsSync(dir));
  });
});

t.test('extra info', async (t) => {
  const app = await build(t);
  const upset = (id: string, json: unknown, key?: string) => app.api(`/api/sessions/${id}/upset_extra_info`, { method: 'POST', json, key });
  const get = async (id: string) => (await app.api(`/api/sessions/${id}/extra_info`)).json();
  const byTask = async (task: string, key?: string) => {
    const res = await app.api(`/api/sessions/extra_info/by_task/${encodeURIComponent(task)}`, { key });
    t.equal(res.status, 200, `by_task ${task}`);
    return res.json();
  };

  t.test('never set: empty extra, null timestamps', async (t) => {
    const id = await create(app);
    t.same(await get(id), { session_id: id, extra: {}, created_at: null, updated_at: null });
  });

  t.test('upset merges top-level keys and returns the whole record', async (t) => {
    const id = await create(app);
    const first = await upset(id, { extra: { task_id: 'T-1', a: 1, nested: { x: 1, y: 2 } } });
    t.equal(first.status, 200);
    const r1 = await first.json();
    t.same(r1.extra, { task_id: 'T-1', a: 1, nested: { x: 1, y: 2 } });
    t.equal(r1.session_id, id);
    t.type(r1.created_at, 'string');
    t.equal(r1.created_at, r1.updated_at);

    const r2 = await (await upset(id, { extra: { a: 2, nested: { z: 3 }, b: [1, 'two', null] } })).json();
    t.same(r2.extra, { task_id: 'T-1', a: 2, nested: { z: 3 }, b: [1, 'two', null] }, 'top-level keys replaced, others kept');
    t.equal(r2.created_at, r1.created_at, 'created_at stays');
    t.ok(r2.updated_at >= r1.updated_at);
    t.same(await get(id), r2, 'GET returns the same record');

    const r3 = await (await upset(id, { extra: {} })).json();
    t.same(r3.extra, r2.extra, 'an empty merge keeps everything');

    const bad: unknown[] = [{ extra: [] }, { extra: 'x' }, { extra: null }, {}, { extra: {}, more: 1 }, { extra: { k: 'nul\u0000' } }, { extra: { 'k\u0000': 1 } }];
    for (const json of bad) {
      const res = await upset(id, json);
      t.equal(res.status, 422, JSON.stringify(json));
      t.equal((await res.json()).code, 'VALIDATION_ERROR');
    }
    t.same((await get(id)).extra, r2.extra, 'bad bodies changed nothing');
  });

  t.test('concurrent merges keep every key', async (t) => {
    const id = await create(app);
    await Promise.all(Array.from({ length: 10 }, (_, i) => upset(id, { extra: { [`k${i}`]: i } })));
    t.same(Object.keys((await get(id)).extra).sort(), Array.from({ length: 10 }, (_, i) => `k${i}`).sort());
  });

  t.test('by_task finds the most recent session with that task_id', async (t) => {
    const older = await create(app);
    const newer = await create(app);
    await app.service.db.em().getConnection().execute(`update sessions set created_at = now() - interval '1 hour' where id = ?`, [older]);
    await upset(newer, { extra: { task_id: 'job-7', who: 'newer' } });
    await upset(older, { extra: { task_id: 'job-7', who: 'older' } });
    const found = await byTask('job-7');
    t.equal(found.session_id, newer);
    t.same(found.extra, { task_id: 'job-7', who: 'newer' });
    t.type(found.created_at, 'string');

    const numeric = await create(app);
    await upset(numeric, { extra: { task_id: 42 } });
    t.equal((await byTask('42')).session_id, numeric, 'a numeric task_id matches its text form');

    // A task id none of the caller's sessions holds is 404, another user's or none (docs/errors.md).
    const missing = async (task: string, key?: string) => app.api(`/api/sessions/extra_info/by_task/${encodeURIComponent(task)}`, { key });
    t.same(await (await missing('no-such-task')).json(), { detail: 'task not found', code: 'NOT_FOUND' });
    t.equal((await missing("x' or 1=1 --")).status, 404);
    const bob = await app.newUser();
    const other = await missing('job-7', bob.key);
    t.equal(other.status, 404, "another user's sessions are not searched");
    t.same(await other.json(), { detail: 'task not found', code: 'NOT_FOUND' }, 'the same answer as an unknown task');
    const nul = await app.api('/api/sessions/extra_info/by_task/a%00b');
    t.equal(nul.status, 422);
  });

  t.test('the by_task path is not read as a session id', async (t) => {
    const res = await app.api('/api/sessions/extra_info');
    t.equal(res.status, 404, 'no session named extra_info');
    t.equal((await app.api('/api/sessions/extra_info/by_task/')).status, 404);
  });
});
