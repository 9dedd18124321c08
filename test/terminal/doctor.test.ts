import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../helpers/app.js';
import { kill, startUp } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { cli, dropProxy, hasStack } from './helpers.js';

/** GET /api/env/check (SSE) and `agentsvc doctor`, healthy, broken and with the service down. */

const IDS = ['database', 'runner', 'sandbox', 'disk', 'home'];
/** The running service also checks what only it can reach (docs/memories-and-settings.md). */
// skills:global: the skills plugin's check of AGENTSVC_HOME/skills (plugins add their checks to the stream).
const SERVER_IDS = [...IDS, 'redis', 'model', 'search', 'skills:global'];

async function sse(res: Response): Promise<{ event: string; data: any }[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((frame) => {
      const event = /^event: (.+)$/m.exec(frame)![1];
      return { event, data: JSON.parse(/^data: (.+)$/m.exec(frame)![1]) };
    });
}

t.test('GET /api/env/check streams one event per check ({check_id, status, detail, fix}), then end; POST runs one', async (t) => {
  const app = await build(t);
  const res = await app.api('/api/env/check');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/event-stream/);
  const events = await sse(res);
  const checks = events.filter((e) => e.event === 'check').map((e) => e.data);
  t.same(checks.map((c) => c.check_id).sort(), [...SERVER_IDS].sort(), 'every check once');
  for (const c of checks) {
    t.same(Object.keys(c).sort(), ['check_id', 'detail', 'fix', 'status'], `${c.check_id} shape`);
    t.ok(['ok', 'warn', 'fail'].includes(c.status));
    t.equal(c.fix === null, c.status === 'ok', `${c.check_id}: a fix exactly when not ok`);
  }
  t.match(checks.find((c) => c.check_id === 'database'), { status: 'ok' });
  t.match(checks.find((c) => c.check_id === 'home'), { status: 'ok', detail: `${app.home} is private and writable` });
  // A root install's home is 0710: its group (postgres, agentsvc-sandbox) may only traverse it.
  // That is fine, and chmod 700 (the old advice) would stop the embedded database at the next start.
  chmodSync(app.home, 0o710);
  t.teardown(() => chmodSync(app.home, 0o700));
  const again = (await sse(await app.api('/api/env/check'))).filter((e) => e.event === 'check').map((e) => e.data);
  t.match(again.find((c) => c.check_id === 'home'), { status: 'ok', detail: `${app.home} is private and writable` }, 'a traverse-only group is private');
  chmodSync(app.home, 0o750);
  const readable = (await sse(await app.api('/api/env/check'))).filter((e) => e.event === 'check').map((e) => e.data);
  t.match(readable.find((c) => c.check_id === 'home'), { status: 'warn', fix: `chmod 710 ${app.home}` }, 'a readable group: the advice keeps the traverse bit');
  chmodSync(app.home, 0o700);
  t.match(checks.find((c) => c.check_id === 'disk'), { detail: /^\d+ MiB free in / });
  t.match(checks.find((c) => c.check_id === 'redis'), { status: 'ok', detail: /not configured/ });
  t.match(checks.find((c) => c.check_id === 'search'), { status: 'warn', fix: /AGENTSVC_SEARCH_BACKEND/ });
  const done = events.at(-1)!;
  t.equal(done.event, 'end');
  const worst = checks.some((c) => c.status === 'fail') ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'ok';
  t.equal(done.data.status, worst);

  t.equal((await app.api('/api/env/check', { key: null })).status, 401, 'needs a key');
  const one = await app.api('/api/env/check/disk', { method: 'POST' });
  t.equal(one.status, 200);
  t.match(await one.json(), { check_id: 'disk', status: /ok|warn|fail/ });
  const unknown = await app.api('/api/env/check/nope', { method: 'POST' });
  t.equal(unknown.status, 404);
  t.equal((await unknown.json()).code, 'NOT_FOUND');
});

t.test('doctor against the service: a readable report; exit 1 exactly when a check fails', async (t) => {
  const app = await build(t);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  const r = await cli(['doctor'], env);
  t.notOk(hasStack(r.stderr));
  const j = await cli(['doctor', '--json'], env);
  const report = JSON.parse(j.stdout);
  t.match(report, { source: 'service', url: app.url });
  t.same(report.checks.map((c: { id: string }) => c.id).sort(), ['service', ...SERVER_IDS].sort());
  const failed = report.checks.filter((c: { status: string }) => c.status === 'fail');
  t.equal(r.code, failed.length ? 1 : 0, 'exit code follows the checks');
  t.equal(j.code, r.code);
  t.match(r.stdout, /^ok {3}service {3}agentsvc answers at http/m, 'plain marks when piped');
  t.match(r.stdout, /^ok {3}database {2}PostgreSQL answers$/m);
  t.match(r.stdout, /^ok {3}home {6}.* is private and writable$/m);
  t.match(r.stdout, /\n\d+ ok, \d+ warnings?, \d+ failed\n$/);

  // Broken: the home open to everyone is a failed check with its fix, and exit 1.
  chmodSync(app.home, 0o777);
  t.teardown(() => chmodSync(app.home, 0o700));
  const broken = await cli(['doctor'], env);
  t.equal(broken.code, 1);
  t.match(broken.stdout, new RegExp(`^FAIL home {6}${app.home} is writable by others \\(mode 777\\)\\n {15}fix: chmod 700 ${app.home}$`, 'm'));
});

t.test('doctor with a docker runner whose daemon is unreachable: runner and sandbox fail', async (t) => {
  const app = await build(t, { AGENTSVC_RUNNER: 'docker', DOCKER_HOST: '/nonexistent/docker.sock' });
  const r = await cli(['doctor', '--json'], { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url });
  t.equal(r.code, 1);
  const checks = JSON.parse(r.stdout).checks;
  t.match(checks.find((c: { id: string }) => c.id === 'sandbox'), { status: 'fail', message: /docker daemon unreachable at \/nonexistent\/docker\.sock/, fix: 'start Docker or set DOCKER_HOST' });
  t.match(checks.find((c: { id: string }) => c.id === 'runner'), { status: 'fail', message: /^docker runner unavailable/ });
});

t.test('doctor with the service down runs the checks locally; a bad setting is named', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-doctor-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const proxy = await dropProxy(1);
  await proxy.close();
  const env = { AGENTSVC_HOME: home, AGENTSVC_URL: proxy.url };
  const r = await cli(['doctor'], env);
  t.equal(r.code, 1);
  t.notOk(hasStack(r.stdout + r.stderr));
  t.match(r.stdout, new RegExp(`^FAIL service {3}agentsvc does not answer at ${proxy.url} \\(from AGENTSVC_URL\\); local checks follow\\n {15}fix: start it with \`agentsvc up\``, 'm'));
  t.match(r.stdout, /^ok {3}config {4}settings valid$/m);
  t.match(r.stdout, /^ok {3}database {2}embedded PostgreSQL in /m);
  t.match(r.stdout, /^ok {3}home {6}.* is private and writable$/m);
  t.match(r.stdout, /^(ok {2}|WARN|FAIL) sandbox /m);
  const j = JSON.parse((await cli(['doctor', '--json'], env)).stdout);
  t.match(j, { source: 'local', status: 'fail' });

  const bad = await cli(['doctor', '--json'], { ...env, AGENTSVC_RUNNER: 'podman' });
  t.equal(bad.code, 1);
  t.match(JSON.parse(bad.stdout).checks.find((c: { id: string }) => c.id === 'config'), { status: 'fail', message: /^invalid setting AGENTSVC_RUNNER/ });
  const hosted = await cli(['doctor', '--json'], { ...env, AGENTSVC_MCP_SERVERS: '{"tools": {"command": "x", "run_in": "host"}, "mine": {"command": "y"}}' });
  t.match(JSON.parse(hosted.stdout).checks.find((c: { id: string }) => c.id === 'mcp'), { status: 'warn', message: /run on the service's host \(run_in: "host"\).*: tools$/, fix: /remove run_in/ }, 'an MCP server set to run on the host is a warning');
  const pg = await cli(['doctor', '--json'], { ...env, DATABASE_URL: 'postgres://nobody:x@127.0.0.1:1/none' });
  t.match(JSON.parse(pg.stdout).checks.find((c: { id: string }) => c.id === 'database'), { status: 'fail', message: /^PostgreSQL does not answer/ });
});

t.test('`up` records its URL in AGENTSVC_HOME/run/url: clients need no --url or --key', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-up-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const up = await startUp({ AGENTSVC_HOME: home, DATABASE_URL: await freshDatabaseUrl(t), OPENAI_API_KEY: 'x' });
  t.teardown(() => kill(up.child, 'SIGKILL'));
  t.equal(readFileSync(join(home, 'run', 'url'), 'utf8').trim(), up.url);
  const r = await cli(['sessions', 'list', '--json'], { AGENTSVC_HOME: home });
  t.equal(r.code, 0, r.stderr);
  t.match(JSON.parse(r.stdout), { items: [], total: 0 });
  await kill(up.child, 'SIGTERM');
  t.notOk(existsSync(join(home, 'run', 'url')), 'removed on a clean stop');
  const down = await cli(['sessions', 'list'], { AGENTSVC_HOME: home });
  t.equal(down.code, 1);
  // Then the default URL (where another service on this machine may answer, refusing our key).
  t.match(down.stderr, /^agentsvc: (cannot reach agentsvc at http:\/\/127\.0\.0\.1:8080 |the key from .*admin\.key was refused)/, 'then the default URL');
});
