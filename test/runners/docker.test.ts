import t, { type Test as Tap } from 'tap';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Dockerode from 'dockerode';
import { createDockerRunner, LABEL_USER, type DockerRunnerOptions } from '../../runners/docker/index.js';
import { RunnerUnavailableError, type Runner } from '../../runners/types.js';
import { filesOf, hostRootOf, runConformance, tracked } from './conformance.js';
import { waitFor } from '../helpers/wait.js';
import { needs } from '../helpers/needs.js';


const IMAGE = process.env.AGENTSVC_TEST_IMAGE ?? 'agentsvc-test:latest';
const home = mkdtempSync(join(tmpdir(), 'agentsvc-docker-'));
t.teardown(() => rmSync(home, { recursive: true, force: true }));

async function refused(t: Tap, p: Promise<unknown>, within: number, why: RegExp) {
  const started = Date.now();
  const e = await p.then(() => null, (e: unknown) => e as Error);
  t.ok(e instanceof RunnerUnavailableError, `RunnerUnavailableError (${e?.message})`);
  t.match(e?.message ?? '', why);
  t.ok(Date.now() - started < within, `failed after ${Date.now() - started} ms`);
}

// These two need no daemon: they run everywhere.
t.test('unreachable daemon: check says where, acquire fails fast', async (t) => {
  const runner = createDockerRunner({ home, image: IMAGE, docker: new Dockerode({ socketPath: '/nonexistent/docker.sock' }) });
  const c = await runner.check();
  t.equal(c.ok, false);
  t.match(c.error, /^docker daemon unreachable at unix:\/\/\/nonexistent\/docker\.sock/);
  await refused(t, runner.acquire('nobody'), 3000, /docker daemon unreachable/);
  await refused(t, runner.reset('nobody'), 3000, /docker daemon unreachable/);
});

t.test('a daemon that never answers: acquire gives up at the API deadline', async (t) => {
  const held: Socket[] = [];
  const server = createServer((s) => void held.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of held) s.destroy();
    server.close();
  });
  const port = (server.address() as { port: number }).port;
  const docker = new Dockerode({ host: '127.0.0.1', port, protocol: 'http' });
  const runner = createDockerRunner({ home, image: IMAGE, docker, apiTimeoutMs: 300 });
  t.match(await runner.check(), { ok: false, error: /unreachable at http:\/\/127\.0\.0\.1:\d+: ping timed out/ });
  await refused(t, runner.acquire('nobody'), 2000, /timed out/);
});

const docker = new Dockerode();
const available = await createDockerRunner({ home, image: IMAGE, docker }).check();
if (!available.ok) needs(t, 'the docker runner tests', `${available.error} (run .ci/docker.sh start)`);
const skip = available.ok ? false : `docker unavailable: ${available.error}`;

const opts: DockerRunnerOptions = { home, image: IMAGE, docker, memoryBytes: 256 * 1024 * 1024, nanoCpus: 500_000_000, pidsLimit: 128 };

async function containersOf(userId: string): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABEL_USER}=${userId}`] } });
}

async function only(t: Tap, userId: string): Promise<string> {
  const list = await containersOf(userId);
  t.equal(list.length, 1, 'exactly one container for the user');
  return list[0]?.Id ?? '';
}

t.test('conformance and audit', { skip }, (t) =>
  runConformance(t, async () => createDockerRunner(opts), { home, audit: { home, nonRootUid: false }, hugeOutputBytes: 200_000_000 }),
);

t.test('container: limits, labels, found again after a restart', { skip }, async (t) => {
  const runner = createDockerRunner(opts);
  const user = tracked(t, runner);
  const u = user('limits');
  const c = await runner.acquire(u);
  t.equal(c.root, '/workspace');
  t.equal(hostRootOf(home, c), join(home, 'workspaces', u));
  const id = await only(t, u);
  const info = await docker.getContainer(id).inspect();
  t.match(info.HostConfig, {
    Memory: 256 * 1024 * 1024,
    NanoCpus: 500_000_000,
    PidsLimit: 128,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    NetworkMode: 'none',
    Privileged: false,
    Init: true,
    Binds: [`${hostRootOf(home, c)}:/workspace`],
  });
  t.notOk(JSON.stringify(info.Mounts).includes('docker.sock'), 'no Docker socket inside');
  t.match(info.Config.Labels, { 'agentsvc.managed': '1', 'agentsvc.user': u });
  t.ok(info.State.Running);

  const status = (await c.exec('grep -E "^(CapEff|NoNewPrivs)" /proc/self/status')).stdout;
  t.match(status, /CapEff:\s+0+\n/, 'no capabilities');
  t.match(status, /NoNewPrivs:\s+1/);
  t.equal((await c.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).stdout, 'lo\n', 'no network');

  await filesOf(home, c).write('keep.txt', 'kept');
  await runner.acquire(u);
  t.equal(await only(t, u), id, 'same runner: same container');

  const restarted: Runner = createDockerRunner(opts);
  t.teardown(() => restarted.close());
  t.equal((await (await restarted.acquire(u)).exec('cat keep.txt')).stdout, 'kept');
  t.equal(await only(t, u), id, 'new runner instance: same container');

  await docker.getContainer(id).stop({ t: 0 });
  const third = createDockerRunner(opts);
  t.teardown(() => third.close());
  t.equal((await (await third.acquire(u)).exec('echo up')).stdout, 'up\n', 'a stopped container is started');
  t.equal(await only(t, u), id);

  t.same(await runner.reset(u), { removed_containers: 1, removed_volume: true });
  t.equal((await containersOf(u)).length, 0, 'container removed');
});

t.test('idle containers stop, and come back on use or after outside changes', { skip }, async (t) => {
  const runner = createDockerRunner({ ...opts, idleStopMs: 400 });
  const user = tracked(t, runner);
  const u = user('idle');
  const c = await runner.acquire(u);
  await filesOf(home, c).write('keep.txt', 'kept');
  const id = await only(t, u);
  const running = async () => (await docker.getContainer(id).inspect()).State.Running;
  const stopped = await waitFor(async () => !(await running()), { timeoutMs: 10_000, everyMs: 200, what: 'the idle container stopped' }).then(
    () => true,
    () => false,
  );
  t.ok(stopped, 'stopped after idleStopMs');
  t.equal((await c.exec('cat keep.txt')).stdout, 'kept', 'the next command starts it');
  t.ok(await running());

  await docker.getContainer(id).stop({ t: 0 });
  t.equal((await c.exec('echo again')).stdout, 'again\n', 'stopped from outside: started again');
  await docker.getContainer(id).remove({ force: true });
  t.equal((await c.exec('cat keep.txt')).stdout, 'kept', 'removed from outside: recreated on the same workspace');
  t.not(await only(t, u), id);
});

t.test('version and upgrade onto a new image with a non-root user', { skip }, async (t) => {
  const runner = createDockerRunner(opts);
  const user = tracked(t, runner);
  const u = user('upgrade');
  const c = await runner.acquire(u);
  await filesOf(home, c).write('keep.txt', 'kept');
  const old = await only(t, u);
  t.match(await runner.version(u), { upgrade_available: false, current_version: new RegExp(`^${IMAGE}@`) });

  // A second image like the production one: same files, commands run as uid 1000.
  const repo = 'agentsvc-test-upgrade';
  const tag = `${process.pid}`;
  await docker.getContainer(old).commit({ repo, tag, changes: 'USER 1000:1000' });
  const next = createDockerRunner({ ...opts, image: `${repo}:${tag}` });
  t.teardown(async () => {
    // The container goes first: an image in use would only be untagged and left dangling.
    await next.reset(u).catch(() => {});
    await next.close();
    await docker.getImage(`${repo}:${tag}`).remove({ force: true }).catch(() => {});
  });
  const v = await next.version(u);
  t.match(v, { upgrade_available: true, current_version: new RegExp(`^${IMAGE}@`), target_version: new RegExp(`^${repo}:${tag}@`) });

  t.same(await next.upgrade(u), { removed_containers: 1, removed_volume: false });
  t.not(await only(t, u), old, 'a new container');
  t.match(await next.version(u), { upgrade_available: false });
  const c2 = await next.acquire(u);
  t.equal((await c2.exec('id -u')).stdout, '1000\n');
  t.equal((await c2.exec('cat keep.txt')).stdout, 'kept', 'workspace kept');
  if (process.getuid?.() === 0) {
    t.same(c2.owner, { uid: 1000, gid: 1000 });
    t.equal(statSync(hostRootOf(home, c2)).uid, 1000, 'workspace handed to the container user');
    await filesOf(home, c2).write('sub/from-service.txt', 'a');
    t.equal(statSync(join(hostRootOf(home, c2), 'sub')).uid, 1000, 'new folders too');
    t.equal((await c2.exec('echo b >> sub/from-service.txt && echo new > sub/new.txt && cat sub/*')).stdout, 'ab\nnew\n');
  }
  const r = await c2.exec('sleep 30.7 & sleep 30.7', { timeoutMs: 500 });
  t.ok(r.timedOut);
  const left = async () => /^sleep 30\.7$/m.test((await c2.exec('ps -o args')).stdout);
  await waitFor(async () => !(await left()), { timeoutMs: 5000, everyMs: 100, what: 'the timed-out commands killed' }).catch(() => {}); // asserted below
  t.notMatch((await c2.exec('ps -o args')).stdout, /^sleep 30\.7$/m, 'the kill works as non-root too');
});
