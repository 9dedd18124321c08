import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertFreshBuild, alive, freshHome, me, postmasterPid, stop, up, waitFor } from './cli-helpers.js';

/**
 * The embedded PostgreSQL after a crash (docs/operations.md): `up` and its PostgreSQL SIGKILLed
 * together, twice, then with the dead server's pid taken by another program. The crash cases are
 * one per file (crash-*.test.ts): each starts `up` on a fresh home several times, and in one file
 * they ran close to tap's per-file limit under a loaded CI run.
 */

assertFreshBuild();

t.test('SIGKILL of up and its PostgreSQL (as the OOM killer would): the next up comes back at once', async (t) => {
  const { home, env, dataDir } = freshHome(t);
  let run = await up(env);
  const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  for (let round = 1; round <= 2; round++) {
    const pgPid = postmasterPid(dataDir);
    t.ok(alive(pgPid), `round ${round}: PostgreSQL runs`);
    run.child.kill('SIGKILL');
    process.kill(pgPid, 'SIGKILL');
    await stop(run.child, 'SIGKILL');
    run = await up(env); // at once: its children may still be shutting down
    t.match(
      run.out(),
      new RegExp(`agentsvc: recovered from an embedded PostgreSQL that died without shutting down \\(pid ${pgPid}\\)`),
      `round ${round}: says what it recovered from`,
    );
    t.equal((await me(run.url, key)).status, 200, `round ${round}: data survived`);
  }

  // The dead server's pid now belongs to another program (pid reuse; a zombie nobody reaps looks
  // the same to kill -0): the lock file must not be taken for a live server.
  const pgPid = postmasterPid(dataDir);
  run.child.kill('SIGKILL');
  process.kill(pgPid, 'SIGKILL');
  await stop(run.child, 'SIGKILL');
  const squatter = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => squatter.kill('SIGKILL'));
  await waitFor(() => !alive(pgPid));
  const lock = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
  lock[0] = String(squatter.pid);
  writeFileSync(join(dataDir, 'postmaster.pid'), lock.join('\n'));
  run = await up(env);
  t.match(run.out(), new RegExp(`recovered from an embedded PostgreSQL that died without shutting down \\(pid ${squatter.pid}\\)`), 'a reused pid is not a live server');
  t.equal((await me(run.url, key)).status, 200);
  t.ok(alive(squatter.pid!), 'the other program is left alone');

  const last = postmasterPid(dataDir);
  t.equal(await stop(run.child, 'SIGTERM'), 0);
  t.notOk(alive(last), 'and it stops its PostgreSQL');
});
