import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl } from '../helpers/db.js';
import { assertFreshBuild, cli, postgresRunningIn, stop, up } from './cli-helpers.js';


assertFreshBuild();

t.test('--version and --help', async (t) => {
  const v = cli(['--version'], {});
  t.equal(v.code, 0);
  t.match(v.stdout, /agentsvc\/\d+\.\d+\.\d+/);
  const h = cli(['--help'], {});
  t.equal(h.code, 0);
  for (const cmd of ['up', 'migrate', 'keys']) t.match(h.stdout, new RegExp(`\\b${cmd}\\b`));
  const k = cli(['keys', '--help'], {});
  for (const cmd of ['create', 'list', 'rename', 'delete']) t.match(k.stdout, new RegExp(`keys ${cmd}`));
});

t.test('a wrong setting stops up with one line and exit 1', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-cli-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  for (const [k, v] of [['AGENTSVC_RUNNER', 'k8s'], ['DATABASE_URL', 'http://x'], ['AGENTSVC_PORT', 'abc']]) {
    const r = cli(['up'], { AGENTSVC_HOME: home, [k]: v });
    t.equal(r.code, 1, k);
    const lines = r.stderr.trim().split('\n');
    t.equal(lines.length, 1, `one line for ${k}: ${r.stderr}`);
    t.match(lines[0], k);
    t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
  const unreachable = cli(['up'], { AGENTSVC_HOME: home, DATABASE_URL: 'postgres://u:p@127.0.0.1:1/db' });
  t.equal(unreachable.code, 1);
  t.match(unreachable.stderr, /DATABASE_URL/);
});

t.test('migrate against DATABASE_URL', async (t) => {
  const url = await freshDatabaseUrl(t);
  const first = cli(['migrate'], { DATABASE_URL: url, AGENTSVC_HOME: tmpdir() });
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /applied \d+ migration/);
  const again = cli(['migrate'], { DATABASE_URL: url, AGENTSVC_HOME: tmpdir() });
  t.match(again.stdout, /up to date/);
});

t.test('embedded PostgreSQL: first start, keys while running, restart keeps data, clean stop', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-cli-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const env = { AGENTSVC_HOME: home };
  const dataDir = join(home, 'db', 'data');

  const first = await up(env);
  t.equal(statSync(join(home, 'admin.key')).mode & 0o777, 0o600, 'admin.key is 0600');
  const adminKey = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  t.equal((await fetch(first.url + '/api/auth/me', { headers: { authorization: `Bearer ${adminKey}` } })).status, 200);

  const typo = cli(['keys', 'create', '--user', 'alcie', '--name', 'ci'], env);
  t.equal(typo.code, 1, 'an unknown user is refused');
  t.equal(typo.stderr, 'agentsvc: no user alcie (check the name, or add --create-user to make it)\n');
  t.equal(cli(['keys', 'list', '--user', 'alcie'], env).code, 1, 'and was not made');
  const created = cli(['keys', 'create', '--user', 'alice', '--create-user', '--name', 'ci', '--json'], env);
  t.equal(created.code, 0, created.stderr);
  const body = JSON.parse(created.stdout);
  t.same(Object.keys(body).sort(), ['key', 'plaintext']);
  t.equal(body.key.name, 'ci');
  const me = await fetch(first.url + '/api/auth/me', { headers: { authorization: `Bearer ${body.plaintext}` } });
  t.equal(me.status, 200);
  t.equal((await me.json()).username, 'alice');
  t.equal((await fetch(first.url + '/api/auth/me')).status, 401);

  t.equal(await stop(first.child, 'SIGTERM'), 0, 'SIGTERM exits 0');
  t.notOk(postgresRunningIn(dataDir), 'embedded PostgreSQL stopped with it');

  // Key commands without a running server start the embedded database for their own duration.
  const list = cli(['keys', 'list', '--user', 'alice', '--json'], env);
  t.equal(list.code, 0, list.stderr);
  t.same(JSON.parse(list.stdout).map((k: { id: string }) => k.id), [body.key.id]);
  t.equal(cli(['keys', 'rename', body.key.id, '--user', 'alice', '--name', 'ci-2'], env).code, 0);
  t.notOk(postgresRunningIn(dataDir));

  const second = await up(env);
  t.notMatch(second.out(), /created user admin/, 'admin is created once');
  const again = await fetch(second.url + '/api/user/api-keys/', { headers: { authorization: `Bearer ${body.plaintext}` } });
  t.equal(again.status, 200, 'data survived the restart');
  t.equal((await again.json())[0].name, 'ci-2');
  const del = cli(['keys', 'delete', body.key.id, '--user', 'alice', '--yes'], env);
  t.equal(del.code, 0, del.stderr);
  t.equal((await fetch(second.url + '/api/auth/me', { headers: { authorization: `Bearer ${body.plaintext}` } })).status, 401);
  const bad = cli(['keys', 'create', '--user', 'alice', '--name', ''], env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /1-50/);
  t.equal(await stop(second.child, 'SIGINT'), 0, 'SIGINT exits 0');
  t.notOk(postgresRunningIn(dataDir));
});
