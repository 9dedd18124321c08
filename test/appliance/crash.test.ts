import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertFreshBuild, alive, cli, postmasterPid, stop, up, waitFor } from './cli-helpers.js';
import { quietFor } from '../helpers/wait.js';

function freshHome(t: { teardown(fn: () => unknown): void }) {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-crash-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  return { home, env: { AGENTSVC_HOME: home }, dataDir: join(home, 'db', 'data') };
}

const me = (url: string, key: string) => fetch(url + '/api/auth/me', { headers: { authorization: `Bearer ${key}` } });

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

t.test('an up killed alone: the next up adopts its orphaned PostgreSQL and stops it', async (t) => {
  const { home, env, dataDir } = freshHome(t);
  const first = await up(env);
  const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  const pgPid = postmasterPid(dataDir);
  await stop(first.child, 'SIGKILL');
  await quietFor(300, 'the orphaned PostgreSQL stopping with its parent');
  t.ok(alive(pgPid), 'the orphan keeps running');


  const second = await up(env);
  t.match(second.out(), new RegExp(`agentsvc: adopted the embedded PostgreSQL \\(pid ${pgPid}\\) left running by agentsvc pid ${first.child.pid}, which is gone`));
  t.equal((await me(second.url, key)).status, 200);

  // Key commands join the server a live up owns; they neither stop it nor take it over.
  const owner = readFileSync(join(home, 'db', 'owner.json'), 'utf8');
  t.equal(JSON.parse(owner).pid, second.child.pid, 'the second up owns it now');
  const list = cli(['keys', 'list', '--json'], env);
  t.equal(list.code, 0, list.stderr);
  t.ok(alive(pgPid), 'still running after a key command');
  t.equal(readFileSync(join(home, 'db', 'owner.json'), 'utf8'), owner, 'ownership unchanged');
  t.equal((await me(second.url, key)).status, 200);

  t.equal(await stop(second.child, 'SIGTERM'), 0);
  t.ok(await waitFor(() => !alive(pgPid)), 'the adopted PostgreSQL stops with the up that adopted it');
});

t.test('a database that does not start: its own error line with the cause and the log, exit 1', async (t) => {
  const { env, dataDir } = freshHome(t);
  const first = await up(env);
  t.equal(await stop(first.child, 'SIGTERM'), 0);
  writeFileSync(join(dataDir, 'PG_VERSION'), '9\n'); // files of another major version
  const r = cli(['up', '--port', '0'], env);
  t.equal(r.code, 1);
  const lines = r.stderr.trim().split('\n');
  t.equal(lines.length, 1, `one line: ${r.stderr}`);
  t.match(lines[0], /^agentsvc: embedded PostgreSQL failed to start: .*incompatible.* \(log: .*postgres\.log\)$/);
  t.notMatch(lines[0], /invalid setting/, 'a database that fails is not a wrong setting');
});
