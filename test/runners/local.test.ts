import t from 'tap';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner } from '../../runners/index.js';
import { createLocalRunner } from '../../runners/local/index.js';
import type { Runner } from '../../runners/types.js';
import { runConformance, tracked } from './conformance.js';

const CI = process.env.CI === 'true';
const home = mkdtempSync(join(tmpdir(), 'agentsvc-local-'));
t.teardown(() => rmSync(home, { recursive: true, force: true }));

const probe = createLocalRunner({ home });
const check = await probe.check();
const confined = check.ok && !check.warning;
if (!confined) {
  // bwrap on PATH yet unusable is a regression in CI (the CI script installs it); elsewhere say why.
  const installed = !(check.warning ?? '').startsWith('bubblewrap not found');
  if (CI && installed) t.fail(`bubblewrap is installed but the local runner cannot use it: ${check.warning}`);
  else t.comment(`confined tests skipped: ${check.warning}`);
}

t.test('conformance, confined when bubblewrap works', (t) => runConformance(t, async () => createRunner('local', { home })));

t.test('conformance, unconfined (bwrapPath null)', async (t) => {
  const runner = createLocalRunner({ home, bwrapPath: null });
  t.match(await runner.check(), { ok: true, warning: /bubblewrap disabled: tools run unconfined/ });
  await runConformance(t, async () => runner);
});

t.test('a bwrap that fails is reported, commands still run', async (t) => {
  const runner = createLocalRunner({ home, bwrapPath: '/bin/false' });
  t.match(await runner.check(), { ok: true, warning: /^bubblewrap not usable \(.*\): tools run unconfined in the workspace$/ });
  const user = tracked(t, runner);
  const c = await runner.acquire(user('fallback'));
  t.equal((await c.exec('echo ok')).stdout, 'ok\n');
});

t.test('local runner has no image', async (t) => {
  const runner = createLocalRunner({ home });
  t.same(await runner.version('anyone'), { upgrade_available: false, reason: 'local runner has no image', current_version: 'local', target_version: 'local' });
  t.same(await runner.upgrade('anyone'), { removed_containers: 0, removed_volume: false });
  t.throws(() => createRunner('docker', { home } as never), /needs an image/);
  await t.rejects(runner.acquire('../etc'), /invalid user id/);
});

t.test('reset kills the user\'s running commands', async (t) => {
  const runner = createLocalRunner({ home });
  const user = tracked(t, runner);
  const u = user('busy');
  const c = await runner.acquire(u);
  const running = c.exec('sleep 20');
  await new Promise((r) => setTimeout(r, 300));
  const r = await runner.reset(u);
  t.same(r, { removed_containers: 0, removed_volume: true });
  const res = await running;
  t.equal(res.signal, 'SIGKILL');
  t.ok(res.durationMs < 5000);
});

t.test('bubblewrap confinement', { skip: confined ? false : `bubblewrap not usable: ${check.warning}` }, async (t) => {
  const server = createServer((s) => s.end('hello\n'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const tcp = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -n1 <&3`;

  const runner = createLocalRunner({ home });
  const user = tracked(t, runner);
  const a = await runner.acquire(user('jail-a'));
  const b = await runner.acquire(user('jail-b'));
  for (const path of ['/usr/x', '/etc/x']) {
    const r = await a.exec(`touch ${path}`);
    t.not(r.exitCode, 0, `touch ${path} fails`);
    t.match(r.stderr, /Read-only file system/);
  }
  // The home folder is an empty tmpfs inside: a write there lands nowhere on the host.
  await a.exec(`touch ${home}/x /tmp/y`);
  t.notOk(existsSync(join(home, 'x')) || existsSync('/tmp/y'), 'writes outside the workspace stay in the sandbox');
  t.equal((await a.exec('touch inside && echo ok')).stdout, 'ok\n', 'the workspace is writable');
  t.equal((await a.exec('touch /tmp/scratch && echo ok')).stdout, 'ok\n', 'a private /tmp is writable');

  writeFileSync(join(home, 'admin.key'), 'secret');
  t.not((await a.exec(`cat ${home}/admin.key`)).exitCode, 0, 'the service home is hidden');
  await b.writeFile('mine.txt', 'b only');
  t.not((await a.exec(`cat ${b.hostRoot}/mine.txt`)).exitCode, 0, "another user's workspace is hidden");

  const procs = await a.exec('ls /proc | grep -c "^[0-9]"');
  t.ok(Number(procs.stdout) < 10, `own pid namespace (${procs.stdout.trim()} processes)`);

  const net = await a.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  t.equal(net.stdout, 'lo\n', 'only loopback');
  t.not((await a.exec(tcp)).exitCode, 0, 'a service on the host loopback is unreachable');

  const open = createLocalRunner({ home, network: true });
  t.teardown(() => open.close());
  const o = await open.acquire(a.userId);
  t.equal((await o.exec(tcp)).stdout, 'hello\n', 'network: true reaches it');
  t.not((await o.exec('touch /usr/x')).exitCode, 0, 'still read-only');
});

t.test('createRunner picks the kind', async (t) => {
  const r: Runner = createRunner('local', { home });
  t.equal(r.kind, 'local');
  t.equal(createRunner('docker', { home, image: 'x' }).kind, 'docker');
  t.throws(() => createRunner('k8s' as 'local', { home }), /unknown runner kind/);
});
