/**
 * The database's disk fills up mid-run (docs/errors.md and docs/socket-protocol.md): the session's events and turns live in a
 * tablespace on a small tmpfs, so PostgreSQL fails their writes as on a full disk ("could not extend
 * file", 53100) while its WAL and the other tables go on. Events must not be lost silently: the run
 * fails with system:error INSUFFICIENT_STORAGE and chat:end failed, a replay over the lost events
 * answers session:resync, and once space is back the turn is closed and chats work again. Mounting
 * needs root (CI runs as root); elsewhere the test says why it skips.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { needs } from '../helpers/needs.js';

const mnt = mkdtempSync(join(tmpdir(), 'agentsvc-dbfull-'));
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', mnt]);
// The tablespace folder must belong to the server's user (`postgres` when the tests run as root).
const owned = mounted.status === 0 ? spawnSync('chown', ['postgres:', mnt]) : mounted;
const skip = needs(t, 'the database full-disk tests (a tmpfs mount)', owned.status === 0 ? false : `cannot mount a tmpfs for PostgreSQL (${owned.stderr?.toString().trim() || 'not root'})`);

t.teardown(() => {
  if (mounted.status === 0) spawnSync('umount', ['-l', mnt]);
  rmdirSync(mnt);
});

/** Fill the tmpfs to the last block; returns a function that frees it again. */
function fill(): () => void {
  const filler = join(mnt, 'filler');
  spawnSync('sh', ['-c', `dd if=/dev/zero of=${filler} bs=4k 2>/dev/null; true`]);
  return () => rmSync(filler, { force: true });
}

t.test('events that cannot be stored fail the run; replay answers resync; space back, chats work', { skip }, async (t) => {
  const { app, model } = await buildWithModel(t);
  const db = new pg.Client({ connectionString: app.config.databaseUrl! });
  await db.connect();
  const space = `small_${Math.random().toString(36).slice(2, 8)}`;
  await db.query(`create tablespace ${space} location '${mnt}'`);
  await db.query(`alter table session_events set tablespace ${space}`);
  await db.query(`alter table turns set tablespace ${space}`);
  t.teardown(async () => {
    // Emptied (or its database already dropped) before the tablespace goes.
    await db.query('alter table session_events set tablespace pg_default').catch(() => {});
    await db.query('alter table turns set tablespace pg_default').catch(() => {});
    await db.end().catch(() => {});
    const url = new URL(app.config.databaseUrl!);
    url.pathname = '/postgres';
    const admin = new pg.Client({ connectionString: url.href });
    await admin.connect();
    await admin.query(`drop tablespace if exists ${space}`).catch(() => {});
    await admin.end();
  });

  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script({ text: ['stored ', 'fine'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'before' })).ok, true);
  await untilEnd(seen, sid);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
  const lastStored = seen.at(-1)!.payload.seq as number;

  // A long answer; the disk fills once it streams.
  model.script({ text: Array.from({ length: 400 }, (_, i) => `chunk ${i} `.padEnd(200, '.')), delayMs: 5 });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'during' })).ok, true);
  await waitFor(() => seen.some((e) => e.name === 'turn:patch' && e.payload.seq > lastStored), { what: 'the first delta' });
  const free = fill();
  t.teardown(free);
  await untilEnd(seen, sid, 30_000, 2);
  const error = seen.filter((e) => e.name === 'system:error').at(-1)?.payload;
  t.match(error, { code: 'INSUFFICIENT_STORAGE' }, 'system:error says storage is full');
  t.notMatch(error?.message ?? '', /base\/|could not extend|\//, 'in plain words');
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'failed', finish_reason: 'error' } });

  // A client that resumes from before the lost events is told to resync, never served a hole.
  const other = app.socket();
  await next(other, 'connect');
  const replay = record(other);
  await subscribe(other, sid, lastStored);
  await waitFor(() => replay.some((e) => e.name === 'session:resync' || e.name === 'chat:end'), { what: 'the replay answer' });
  t.ok(
    replay.some((e) => e.name === 'session:resync'),
    'session:resync',
  );
  // What was stored before the disk filled may come first, whole: no seq skipped.
  const before = replay.slice(0, replay.findIndex((e) => e.name === 'session:resync')).map((e) => e.payload.seq);
  t.same(
    before,
    before.map((_, i) => lastStored + 1 + i),
    'no hole served',
  );

  const sent = seen.filter((e) => e.payload.seq > lastStored).length;
  t.comment(`database disk full mid-run: ${sent} events sent live, ${before.length} of them replayed whole, then session:resync`);

  // Space returns: the run's turn is closed, and the next chat works and is stored.
  free();
  const back = Date.now();
  const messages = async () => (await (await app.api(`/api/sessions/${sid}/messages`)).json()) as { status: string; role: string }[];
  await waitFor(async () => !(await messages()).some((m) => m.status === 'streaming'), { timeoutMs: 20_000, everyMs: 100, what: 'no turn left streaming' });
  t.comment(`the failed run's turn was closed ${Date.now() - back} ms after space returned`);
  t.same(
    (await messages()).map((m) => m.status),
    ['completed', 'completed', 'completed', 'failed'],
  );
  model.script({ text: ['space ', 'is back'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'after' })).ok, true);
  await untilEnd(seen, sid, 20_000, 3);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
  t.equal((await messages()).length, 6);
});
