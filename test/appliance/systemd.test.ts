/**
 * The hardened systemd unit (deploy/systemd/agentsvc.service, docs/monitoring.md#systemd) under a
 * real systemd: a container whose PID 1 is Debian's systemd (an image of this machine's /etc with
 * /usr bound read-only: no registry, nothing downloaded) starts the unit as written, and a Bash call
 * runs in bubblewrap inside it. `systemd-analyze security` rates the unit 4.0 or better.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t from 'tap';
import { startFakeModel } from '../fixtures/fake-model.js';
import { waitFor } from '../helpers/wait.js';
import { hasCommand, needs } from '../helpers/needs.js';

const UNIT = 'deploy/systemd/agentsvc.service';
const has = hasCommand;
const sh = (cmd: string, args: string[], input?: Buffer | string) => spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 << 20 });

const why = !has('systemd-analyze')
  ? 'systemd-analyze not installed (Debian package systemd)'
  : !has('docker') || sh('docker', ['info']).status !== 0
    ? 'no docker daemon (.ci/docker.sh start)'
    : !has('/lib/systemd/systemd')
      ? 'no /lib/systemd/systemd to run as the container PID 1'
      : false;
needs(t, 'the systemd unit proven under systemd', why);


t.test('systemd-analyze rates the unit 4.0 or better', { skip: why }, async (t) => {
  const r = sh('systemd-analyze', ['security', '--offline=true', '--no-pager', UNIT]);
  const m = /Overall exposure level for agentsvc\.service: ([\d.]+)/.exec(r.stdout + r.stderr);
  t.ok(m, 'an overall rating');
  t.comment(`rating: ${m?.[1]}`);
  t.ok(Number(m?.[1]) <= 4, `exposure ${m?.[1]} <= 4.0 (was 8.7 EXPOSED)`);
});

function freePort(): Promise<number> {
  return new Promise((done) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
  });
}

t.test('the unit starts under systemd and runs a Bash call in bubblewrap', { skip: why }, async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = (body: any) =>
    body.messages.some((m: any) => m.role === 'tool')
      ? { text: [`RESULT ${body.messages.filter((m: any) => m.role === 'tool').map((m: any) => String(m.content)).join(' ')}`] }
      : { toolCalls: [{ name: 'Bash', args: { command: 'echo hardened > proof.txt; cat proof.txt; id -u' } }] };

  // The image: this machine's /etc and the merged-/usr links; /usr itself is bound at run time.
  const root = mkdtempSync(join(tmpdir(), 'systemd-root-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const d of ['proc', 'sys', 'dev', 'run', 'tmp', 'var/lib', 'var/log', 'var/tmp', 'opt', 'root', 'home', 'usr']) mkdirSync(join(root, d), { recursive: true });
  for (const l of ['bin', 'lib', 'lib64', 'sbin']) symlinkSync(`usr/${l}`, join(root, l));
  const image = `agentsvc-systemd-test:${process.pid}`;
  const build = spawnSync('sh', ['-c', `set -e; tar -C / -c --exclude=etc/machine-id etc | tar -C ${root} -x; : > ${root}/etc/machine-id; tar -C ${root} -c . | docker import - ${image}`], { encoding: 'utf8' });
  t.equal(build.status, 0, build.stderr);
  t.teardown(() => void sh('docker', ['rmi', '-f', image]));

  // A run of this file that was killed leaves its container behind: remove those first.
  const stale = sh('docker', ['ps', '-aq', '--filter', 'label=agentsvc-systemd-test']).stdout.split('\n').filter(Boolean);
  if (stale.length) sh('docker', ['rm', '-f', ...stale]);
  const name = `agentsvc-systemd-${process.pid}`;
  const port = await freePort();
  const checkout = resolve('.');
  const run = sh('docker', [
    'run', '-d', '--name', name, '--label', 'agentsvc-systemd-test', '--network', 'host',
    // systemd as PID 1 sets up the unit's namespaces and mounts: it needs CAP_SYS_ADMIN.
    '--cap-add', 'SYS_ADMIN', '--security-opt', 'seccomp=unconfined', '--security-opt', 'apparmor=unconfined',
    '--cgroupns=host', '-v', '/sys/fs/cgroup:/sys/fs/cgroup:rw', '-v', '/usr:/usr:ro',
    '-v', `${checkout}:/opt/agentsvc/node_modules/agentsvc:ro`,
    '--tmpfs', '/run', '--tmpfs', '/run/lock', '--tmpfs', '/tmp', '-e', 'container=docker',
    image, '/lib/systemd/systemd',
  ]);
  t.equal(run.status, 0, run.stderr);
  t.teardown(() => void sh('docker', ['rm', '-f', name]));
  const exec = (script: string) => sh('docker', ['exec', name, 'sh', '-c', script]);
  await waitFor(() => /running|degraded/.test(exec('systemctl is-system-running').stdout), { timeoutMs: 60_000, everyMs: 250, what: 'systemd up' });

  const env = `OPENAI_BASE_URL=${model.baseUrl}\nOPENAI_API_KEY=x\nAGENTSVC_MODEL=fake-model\n`;
  const install = exec(
    [
      'set -e',
      'useradd --system --home-dir /var/lib/agentsvc --create-home --shell /usr/sbin/nologin agentsvc',
      `mkdir -p /etc/agentsvc && printf '${env.replace(/\n/g, '\\n')}' > /etc/agentsvc/env`,
      // The unit as shipped; only the port differs, so that a service on this machine's 3000 is left alone.
      `sed 's/^Environment=AGENTSVC_PORT=3000$/Environment=AGENTSVC_PORT=${port}/' /opt/agentsvc/node_modules/agentsvc/${UNIT} > /etc/systemd/system/agentsvc.service`,
      'systemctl daemon-reload',
      'systemctl start agentsvc',
    ].join('; '),
  );
  t.equal(install.status, 0, install.stderr);
  const journal = () => exec('journalctl -u agentsvc --no-pager').stdout;
  await waitFor(() => journal().includes(`listening on http://127.0.0.1:${port}`), { timeoutMs: 120_000, everyMs: 500, what: 'agentsvc listening under systemd' });
  t.notMatch(journal(), /local runner unavailable/, 'bubblewrap works under the unit\'s hardening');
  const shown = exec('systemctl show -p NoNewPrivileges,ProtectSystem,UMask agentsvc').stdout.trim().split('\n').sort();
  t.same(shown, ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'UMask=0077'], 'the hardening applies');

  const key = exec('cat /var/lib/agentsvc/admin.key').stdout.trim();
  t.match(key, /^sk-/);
  // Not spawnSync: the fake model answers from this process's event loop.
  const chat = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
    const c = execFile(process.execPath, ['bin/run.js', 'chat', '--url', `http://127.0.0.1:${port}`, '--key', key, '-m', 'run it'], { timeout: 60_000 }, (err, stdout, stderr) =>
      done({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
    c.stdin?.end();
  });
  t.comment(chat.stdout);
  t.equal(chat.status, 0, chat.stderr);
  t.match(chat.stdout, /RESULT hardened\s+1000/, 'the Bash call ran as the sandbox user and wrote into the session folder');
  const proof = exec('find /var/lib/agentsvc/workspaces -name proof.txt -printf "%u %m\\n"').stdout.trim();
  t.equal(proof, 'agentsvc 600', "the file is the service user's, private (UMask=0077)");

  const stop = exec('systemctl stop agentsvc; systemctl show -p ActiveState,Result agentsvc');
  t.same(stop.stdout.trim().split('\n').sort(), ['ActiveState=inactive', 'Result=success'], 'SIGTERM stops it cleanly');
});
