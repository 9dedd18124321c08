import t from 'tap';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { unconfined } from '../helpers/confined.js';
import { chatAs, envChecks, offered } from '../plugins/helpers.js';
import { waitFor } from '../helpers/wait.js';

// stdio MCP servers run by default inside each user's computer: one process per user, confined
// like that user's commands. These tests need the local runner's bubblewrap confinement.
const skip = await unconfined(t, 'stdio MCP servers in users\' computers');

const PROBE = resolve('test/fixtures/mcp-probe.mjs');

const unhandled: unknown[] = [];
process.on('unhandledRejection', (e) => unhandled.push(e));
t.teardown(() => {
  if (unhandled.length) throw new Error(`unhandled rejections: ${unhandled.map(String).join('; ')}`);
});

const until = (what: string, fn: () => boolean | Promise<boolean>, ms = 20_000) => waitFor(fn, { timeoutMs: ms, everyMs: 100, what });

/** Host pids of `node mcp-probe.mjs` working in `dir` (the probe's process, seen from the host). */
function pidsIn(dir: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (readlinkSync(`/proc/${p}/cwd`) === dir && /(^|\/)node$/.test(argv[0]) && argv[1] === 'mcp-probe.mjs') out.push(Number(p));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

t.test('a stdio MCP server runs in each user\'s computer: confined, one process per user, restarted when killed', { skip }, async (t) => {
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_RUNNER: 'local',
    AGENTSVC_MCP_SERVERS: JSON.stringify({ probe: { command: 'node', args: ['mcp-probe.mjs'], timeout_ms: 5000 } }),
  });
  const a = await app.newUser();
  const b = await app.newUser();
  const sa = await createSession(app, a.key);
  const sb = await createSession(app, b.key);
  const rootA = join(app.config.workspaces, a.userId);
  const rootB = join(app.config.workspaces, b.userId);
  for (const root of [rootA, rootB]) {
    mkdirSync(root, { recursive: true });
    copyFileSync(PROBE, join(root, 'mcp-probe.mjs'));
  }
  const before = await envChecks(app);
  t.match(before['mcp:probe'], { status: 'ok', detail: /one process per user in their computer/ }, 'nothing started before a first run');

  const secret = join(app.home, 'admin.key');
  const where = async (sid: string, key: string, args: Record<string, unknown> = {}) => {
    const r = await chatAs(app, key, model, sid, 'where', { toolCalls: [{ name: 'mcp__probe__where', args }] }, { text: ['ok'] });
    t.equal(r.end.status, 'completed');
    t.equal(r.results[0].status, 'done', `the call answered: ${r.results[0].result}`);
    return JSON.parse(r.results[0].result) as { cwd: string; uid: number; pid: number; shadow: boolean; token: string; sees: boolean | null };
  };

  const first = await where(sa, a.key, { path: secret });
  t.ok(offered(model, 0).includes('mcp__probe__where'), 'its tools are offered in the user\'s first run');
  t.equal(first.sees, false, 'the server cannot see the service\'s home (admin key)');
  t.equal(first.shadow, false, 'nor read /etc/shadow');
  t.notOk(pidsIn(rootB).length, 'no process for B before B runs');
  const hostPids = pidsIn(rootA);
  t.equal(hostPids.length, 1, `one process for A, working in A's computer (${hostPids})`);

  const again = await where(await createSession(app, a.key), a.key);
  t.equal(again.token, first.token, 'A\'s second session talks to the same process');
  const other = await where(sb, b.key, { path: join(rootA, 'mcp-probe.mjs') });
  t.not(other.token, first.token, 'B has a process of its own');
  t.equal(other.sees, false, 'and B\'s cannot see A\'s files');
  t.equal(pidsIn(rootB).length, 1);

  const conns = () => app.service.firstParty.mcp().filter((c) => c.name === 'probe');
  t.equal(conns().length, 2, 'two connections: one per user');
  process.kill(hostPids[0], 'SIGKILL');
  await until('A\'s server restarted', () => {
    const now = pidsIn(rootA);
    return now.length === 1 && now[0] !== hostPids[0] && conns().every((c) => c.state === 'ready');
  });
  const restarted = await where(sa, a.key);
  t.not(restarted.token, first.token, 'a killed server comes back as a new process');
  t.equal(pidsIn(rootB).length, 1, 'B\'s server was not touched');
  const checks = await envChecks(app);
  t.match(checks['mcp:probe'], { status: 'ok', detail: /2 of 2 users' processes ready \(stdio, in users' computers, 1 tools\); restarted 1 times/ });

});

t.test('a server that cannot start in one user\'s computer fails for that user only: nobody\'s moves to the host', { skip }, async (t) => {
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_RUNNER: 'local',
    AGENTSVC_MCP_SERVERS: JSON.stringify({ probe: { command: 'node', args: ['mcp-probe.mjs'], timeout_ms: 5000, start_timeout_ms: 5000 } }),
  });
  const a = await app.newUser();
  const b = await app.newUser();
  const rootA = join(app.config.workspaces, a.userId);
  const rootB = join(app.config.workspaces, b.userId);
  mkdirSync(rootA, { recursive: true });
  mkdirSync(rootB, { recursive: true });
  // Only B's tree has the server's script: in A's computer `node mcp-probe.mjs` exits at once.
  copyFileSync(PROBE, join(rootB, 'mcp-probe.mjs'));
  const secret = join(app.home, 'admin.key');

  const sa = await createSession(app, a.key);
  const failed = await chatAs(app, a.key, model, sa, 'hi', { text: ['ok'] });
  t.equal(failed.end.status, 'completed', 'A\'s run goes on without the server');
  t.notOk(offered(model, 0).some((n) => n.startsWith('mcp__')), 'A is offered none of its tools');
  const system = String(model.requests[0].messages[0].content);
  t.match(system, /MCP server probe \(tools mcp__probe__\*\) did not start in this user's computer: .*(Cannot find module|exit code)/, 'A\'s run is told why');

  const sb = await createSession(app, b.key);
  const r = await chatAs(app, b.key, model, sb, 'where', { toolCalls: [{ name: 'mcp__probe__where', args: { path: secret } }] }, { text: ['ok'] });
  t.equal(r.results[0].status, 'done', `B's server serves B: ${r.results[0].result}`);
  const where = JSON.parse(r.results[0].result);
  t.equal(where.sees, false, 'in B\'s computer: it cannot see the service\'s admin key');
  t.equal(where.shadow, false, 'nor /etc/shadow');
  t.equal(pidsIn(rootB).length, 1, 'B\'s process works in B\'s computer');
  t.notMatch(String(model.requests[model.requests.length - 2].messages[0].content), /did not start/, 'B\'s run is told of no failure');
  const conns = app.service.firstParty.mcp().filter((c) => c.name === 'probe');
  t.equal(conns.length, 2, 'one connection per user, none on the host');
  // A's process is restarted with backoff (1 s, 2 s, ...): on a loaded machine B's run can outlast
  // the first delay, so the checks below are read while A's is between two attempts.
  await until("A's server failed, between restarts", () => conns.some((c) => c.state === 'failed'), 30_000);
  t.same(conns.map((c) => c.state).sort(), ['failed', 'ready']);

  // Each user's /api/env/check shows their own process; A's stderr is A's and the admin's only.
  const asA = (await envChecks(app, a.key))['mcp:probe'];
  t.match(asA, { status: 'fail', detail: /Cannot find module|exit code/ }, 'A sees their failure');
  const asB = (await envChecks(app, b.key))['mcp:probe'];
  t.match(asB, { status: 'ok', detail: /^1 tools \(stdio, in your computer/ }, 'B sees their own server ready');
  t.notMatch(JSON.stringify(asB), /Cannot find module|exit code|mcp-probe/, 'and nothing of A\'s stderr');
  t.notMatch(JSON.stringify(asB), new RegExp(a.userId), 'nor A\'s id');
  const asAdmin = (await envChecks(app))['mcp:probe'];
  t.match(asAdmin, { status: 'warn', detail: new RegExp(`1 of 2 users' processes ready.*failing for 1: ${a.userId}: .*(Cannot find module|exit code)`) }, 'the admin sees every user');
  const one = await app.api('/api/env/check/mcp:probe', { method: 'POST', key: b.key });
  t.match(await one.json(), { check_id: 'mcp:probe', status: 'ok', detail: /in your computer/ }, 'one check, as B: B\'s own');

  // Once A's tree has the script, A's own process comes back (restarted with backoff).
  copyFileSync(PROBE, join(rootA, 'mcp-probe.mjs'));
  await until('A\'s server up', () => conns.every((c) => c.state === 'ready'), 30_000);
  const back = await chatAs(app, a.key, model, sa, 'where', { toolCalls: [{ name: 'mcp__probe__where', args: { path: secret } }] }, { text: ['ok'] });
  t.equal(back.results[0].status, 'done');
  t.equal(JSON.parse(back.results[0].result).sees, false, 'in A\'s computer too');
  t.equal(pidsIn(rootA).length, 1);
});
