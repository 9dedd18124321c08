import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertFreshBuild, alive, cli, freshHome, me, postmasterPid, stop, up, waitFor } from './cli-helpers.js';
import { quietFor } from '../helpers/wait.js';

/**
 * The embedded PostgreSQL after a crash (docs/operations.md): `up` SIGKILLed alone leaves its
 * PostgreSQL running, and the next `up` adopts it. One crash case per file (crash-*.test.ts).
 */

assertFreshBuild();

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
