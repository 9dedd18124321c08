import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Dockerode from 'dockerode';
import { NpxShelf } from '../../plugins/mcp/npx.js';
import { createDockerRunner, LABEL_USER } from '../../runners/docker/index.js';
import { needs } from '../helpers/needs.js';
import { fixtureRegistry } from '../helpers/npm-registry.js';
import { waitFor } from '../helpers/wait.js';
import { npxScenario } from './npx-scenario.js';

// test/mcp/npx.test.ts's scenario in a Docker computer (docs/mcp-servers.md): the npm shelf the
// host fills is bound read-only in the user's container, npx runs there offline as the image's
// user (uid 1000), with no network. The image needs Node.js: .ci/docker.sh builds
// agentsvc-test-node:latest (busybox plus Debian 12's nodejs and npm) in the background at
// `start`; this file waits for that build when it is still running (its outcome in a status file).
const IMAGE = process.env.AGENTSVC_TEST_NODE_IMAGE ?? 'agentsvc-test-node:latest';
const STATUS = join(process.env.AGENTSVC_DOCKER_STATE ?? '/var/run/agentsvc-ci-docker', 'node-image.status');
/** How long a build still running may take (.ci/docker.sh measured about a minute, cold). */
const BUILD_WAIT_MS = 240_000;

const docker = new Dockerode();
const home = mkdtempSync(join(tmpdir(), 'agentsvc-docker-npx-probe-'));
t.teardown(() => rmSync(home, { recursive: true, force: true }));
const probe = () => createDockerRunner({ home, image: IMAGE, docker }).check();
const buildState = () => {
  try {
    return readFileSync(STATUS, 'utf8').trim();
  } catch {
    return 'never started';
  }
};

/** Why the file cannot run here, or false. */
async function missing(): Promise<string | false> {
  if (process.getuid?.() !== 0) return 'the service must run as root to hand a workspace to the image\'s uid 1000';
  let check = await probe();
  if (!check.ok && buildState() === 'building') {
    t.comment(`waiting for .ci/docker.sh's background build of ${IMAGE}`);
    const t0 = Date.now();
    await waitFor(async () => buildState() !== 'building' || (await probe()).ok, { timeoutMs: BUILD_WAIT_MS, everyMs: 1000, what: `the build of ${IMAGE}` });
    t.comment(`waited ${Date.now() - t0} ms for the image`);
    check = await probe();
  }
  if (check.ok) return false;
  return `${check.error} (run .ci/docker.sh start, or .ci/docker.sh node-image; the background build: ${buildState()})`;
}
const skip = needs(t, 'npx MCP servers in Docker computers', await missing());

const registry = !skip ? await fixtureRegistry(t) : { url: '', requests: [] as string[] };

t.test('npx servers in a Docker computer with no network: one works, one fails at start, one hangs', { skip }, (t) =>
  npxScenario(t, registry, {
    env: { AGENTSVC_RUNNER: 'docker', AGENTSVC_RUNNER_IMAGE: IMAGE },
    // The user's container is made at the first command, and three Debian npx (npm 9, its modules
    // unbundled: hundreds of files to load, about 1.5 s of CPU each) start at once in it, with one
    // CPU (the runner's default limit): about 5 s on a quiet machine, 10 to 14 s with the
    // machine's load at 20.
    startMs: 15_000,
    inside: () => '/workspace',
    // The user's container outlives the service: removed with the test.
    onUser: (userId) =>
      t.teardown(async () => {
        for (const c of await docker.listContainers({ all: true, filters: { label: [`${LABEL_USER}=${userId}`] } })) await docker.getContainer(c.Id).remove({ force: true });
      }),
  }),
);

t.test('each server starts from a fresh copy of the shelf\'s documents in its own folder of the container\'s /tmp', { skip }, async (t) => {
  // A container's /tmp is shared by the user's processes and outlives them (the local runner's is
  // private to each command): one copy for all would keep the documents of an older shelf.
  const runner = createDockerRunner({ home, image: IMAGE, docker, memoryBytes: 256 * 1024 * 1024 });
  const user = `npxcache${process.pid}`;
  t.teardown(async () => {
    await runner.reset(user).catch(() => {});
    await runner.close();
  });
  const c = await runner.acquire(user);
  const shelf = new NpxShelf(join(home, 'shared'), join(home, 'cache'), () => {});
  const doc = join(home, 'shared', 'npm', 'meta', '_cacache', 'doc');
  mkdirSync(join(doc, '..'), { recursive: true });
  const read = async (server: string) => {
    const l = await shelf.launch('exec cat "$npm_config_cache/_cacache/doc"', server);
    const r = await c.exec(l.command, { env: l.env });
    t.equal(r.exitCode, 0, `${server} started: ${r.stderr}`);
    return r.stdout;
  };
  writeFileSync(doc, 'first shelf\n');
  t.equal(await read('a'), 'first shelf\n');
  writeFileSync(doc, 'second shelf\n');
  t.equal(await read('a'), 'second shelf\n', 'a server started again reads the shelf as it is now');
  t.same(await Promise.all(['a', 'b', 'c'].map(read)), ['second shelf\n', 'second shelf\n', 'second shelf\n'], 'servers starting at once each read a whole copy');
  const dirs = await c.exec('ls -a /tmp');
  t.same(dirs.stdout.split('\n').filter((n) => n.startsWith('.npm')), ['.npm-a', '.npm-b', '.npm-c'], 'one folder per server, replaced at each start');
});
