import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { assertFreshBuild, cli } from '../appliance/cli-helpers.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { kill } from '../helpers/cli.js';
import { boot, modelEnv, tempHome } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { json, liveInstall, script, served } from './helpers.js';

/**
 * `agentsvc backup` and `agentsvc restore` of an install on DATABASE_URL (docs/operations.md): a
 * database that holds an install is refused; restored into another, the service answers the same;
 * `--force` over a stopped install keeps the database when the restore fails. Split over backup-restore, backup-archives and backup-restore-url.test.ts so that each
 * file stays well under a minute (together they took 93 s in a loaded CI run).
 */
t.setTimeout(600_000);
assertFreshBuild();

t.test('round trip with DATABASE_URL', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = script;
  const [dbA, dbB] = [await freshDatabaseUrl(t), await freshDatabaseUrl(t)];
  const home = tempHome(t);
  const { up, sid, bob } = await liveInstall(t, { ...modelEnv(model), AGENTSVC_HOME: home, DATABASE_URL: dbA });
  const before = await served(up, sid);
  const archive = join(home, '..', `${home.split('/').pop()}.tar`);
  t.teardown(() => rmSync(archive, { force: true }));
  t.equal(cli(['backup', '-o', archive], { AGENTSVC_HOME: home, DATABASE_URL: dbA }).code, 0, 'backup (plain tar)');

  const into = tempHome(t);
  const refused = cli(['restore', archive, '--home', into], { DATABASE_URL: dbA });
  t.equal(refused.code, 1, 'a database that holds an install is refused');
  t.match(refused.stderr, /already holds an install/);
  t.same(readdirSync(into), [], 'nothing written');

  const r = cli(['restore', archive, '--home', into], { DATABASE_URL: dbB });
  t.equal(r.code, 0, `restore into another database: ${r.stderr}`);
  const restored = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: into, DATABASE_URL: dbB });
  t.same(await served(restored, sid), before, 'same sessions, turns, checkpoints and file');
  t.equal((await json(await restored.api('/api/auth/me', { key: bob }))).username, 'bob');

  // --force over that install (stopped): a failed restore keeps the database, a good one replaces it.
  await kill(restored.up.child, 'SIGTERM');
  const carol = JSON.parse(cli(['keys', 'create', '--name', 'c', '--user', 'carol', '--create-user', '--json'], { AGENTSVC_HOME: into, DATABASE_URL: dbB }).stdout).plaintext as string;
  const cut = `${archive}.cut`;
  t.teardown(() => rmSync(cut, { force: true }));
  writeFileSync(cut, readFileSync(archive).subarray(0, -20_000));
  const bad = cli(['restore', cut, '--home', into, '--force'], { DATABASE_URL: dbB });
  t.equal(bad.code, 1, 'a truncated archive is refused');
  const kept = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: into, DATABASE_URL: dbB });
  t.equal((await json(await kept.api('/api/auth/me', { key: carol }))).username, 'carol', 'the failed restore left the database as it was');
  await kill(kept.up.child, 'SIGTERM');
  const forced = cli(['restore', archive, '--home', into, '--force'], { DATABASE_URL: dbB });
  t.equal(forced.code, 0, `restore --force: ${forced.stderr}`);
  const replaced = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: into, DATABASE_URL: dbB });
  t.same(await served(replaced, sid), before, 'the archive\'s install');
  t.equal((await replaced.api('/api/auth/me', { key: carol })).status, 401, 'a key made after the backup is gone');
});
