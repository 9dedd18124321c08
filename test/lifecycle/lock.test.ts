import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { alive, assertFreshBuild, postmasterPid, stop } from '../appliance/cli-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { cli } from '../terminal/helpers.js';
import { HomeLocked, lockFile, lockHome } from '../../src/platform/db/home-lock.js';
import { exited, freshHome, refusal, slowUpload } from './helpers.js';

// `agentsvc up` holds a lock on its home from before its database starts until after it has
// stopped (docs/operations.md, "The home lock").
assertFreshBuild();
const { home, dataDir, adminKey, up } = freshHome(t, 'lock');

t.test('a second up while the first is shutting down is refused naming its pid; the lock goes after the database', async (t) => {
  const first = await up(t, { AGENTSVC_SHUTDOWN_SECONDS: '60' });
  const pg = postmasterPid(dataDir);
  t.ok(alive(pg), 'the embedded PostgreSQL runs');
  const serving = await cli(['up', '--port', '0', '--home', home]);
  t.equal(serving.code, 1);
  t.equal(serving.stderr, refusal(home, first.child.pid!, `serving ${first.url}`), 'while serving: one line naming the pid and URL');

  const stalled = await slowUpload(t, first.url, adminKey());
  first.child.kill('SIGTERM');
  await waitFor(() => /SIGTERM received, shutting down \(at most 60s\)/.test(first.out()), { what: 'the shutdown line' });
  // The HTTP server waits on the stalled request: the database, and so the lock, are still held.
  const during = await cli(['up', '--port', '0', '--home', home], {}, { timeoutMs: 20_000 });
  t.equal(during.code, 1);
  t.equal(during.stderr, refusal(home, first.child.pid!, 'stopping'), 'while stopping: refused, naming the pid');
  t.notMatch(during.stdout, /listening/);
  t.ok(alive(pg), 'the database is still up while the first one shuts down');
  t.equal(first.child.exitCode, null, 'the first is still shutting down');

  stalled.destroy();
  t.equal(await exited(first), 0, 'then it stops cleanly: exit 0');
  t.notOk(alive(pg), 'its PostgreSQL stopped');
  t.match(first.out(), /agentsvc: stopped\n/);
  const next = await up(t);
  t.ok(next.url, 'the lock is free: the next up starts');
  t.equal(await stop(next.child, 'SIGTERM'), 0);
});

t.test('a lock left by a killed up does not block the next one', async (t) => {
  const first = await up(t);
  await stop(first.child, 'SIGKILL');
  t.equal(JSON.parse(readFileSync(lockFile(home), 'utf8')).pid, first.child.pid, 'the file still names the dead up');
  // A pid that runs (this test's) in the file changes nothing: only the kernel lock counts.
  writeFileSync(lockFile(home), JSON.stringify({ pid: process.pid, state: 'serving', url: 'http://127.0.0.1:1' }));
  const next = await up(t);
  t.match(next.out(), /adopted the embedded PostgreSQL/, 'it adopts the orphaned database');
  t.equal(JSON.parse(readFileSync(lockFile(home), 'utf8')).pid, next.child.pid, 'and holds the lock');
  // In-process too: a held lock refuses, naming the holder.
  const refused = await lockHome(home, 0).then(
    () => null,
    (e) => e,
  );
  t.ok(refused instanceof HomeLocked);
  t.equal(refused?.holder?.pid, next.child.pid);
  t.equal(await stop(next.child, 'SIGTERM'), 0);
  const mine = await lockHome(home);
  t.same(JSON.parse(readFileSync(lockFile(home), 'utf8')), { pid: process.pid, state: 'starting' }, 'released on a clean stop');
  mine.release();
});
