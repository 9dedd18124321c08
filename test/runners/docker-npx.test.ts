import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Dockerode from 'dockerode';
import { createDockerRunner } from '../../runners/docker/index.js';
import { SHARED_IN_CONTAINER } from '../../runners/docker/shared.js';
import { SHARED_IN_COMPUTER } from '../../plugins/mcp/npx.js';
import { needs } from '../helpers/needs.js';

// MCP servers launched with `npx` on the docker runner (docs/mcp-servers.md): the npm shelf the
// service fills on the host (<home>/shared/npm) is in every container, read-only, where the local
// runner shows it, so npx there runs offline from it as in the local runner.
const IMAGE = process.env.AGENTSVC_TEST_IMAGE ?? 'agentsvc-test:latest';
const home = mkdtempSync(join(tmpdir(), 'agentsvc-docker-npx-'));
t.teardown(() => rmSync(home, { recursive: true, force: true }));

const docker = new Dockerode();
const available = await createDockerRunner({ home, image: IMAGE, docker }).check();
if (!available.ok) needs(t, 'the docker npx tests', `${available.error} (run .ci/docker.sh start)`);
const skip = available.ok ? false : `docker unavailable: ${available.error}`;

t.test('the npm shelf of <home>/shared is in the container, read-only, where the local runner shows it', { skip }, async (t) => {
  t.equal(SHARED_IN_CONTAINER, SHARED_IN_COMPUTER, 'the path npx launchers are given');
  const runner = createDockerRunner({ home, image: IMAGE, docker, memoryBytes: 256 * 1024 * 1024 });
  const user = `npx${process.pid}`;
  t.teardown(async () => {
    await runner.reset(user).catch(() => {});
    await runner.close();
  });
  const c = await runner.acquire(user);
  // Fetched after the container was made: shows through the bind.
  mkdirSync(join(home, 'shared', 'npm', 'global'), { recursive: true });
  writeFileSync(join(home, 'shared', 'npm', 'global', 'marker'), 'fetched on the host\n');
  const read = await c.exec(`cat ${SHARED_IN_CONTAINER}/npm/global/marker`);
  t.equal(read.stdout, 'fetched on the host\n', 'what the host fetched is readable in the container');
  const write = await c.exec(`echo x > ${SHARED_IN_CONTAINER}/npm/global/marker 2>&1; echo $?`);
  t.not(write.stdout.trim().split('\n').at(-1), '0', `and not writable (${write.stdout.trim()})`);

  // npx itself needs node in the image: the production image (runners/docker/Dockerfile) installs
  // Debian's nodejs and npm; the test image .ci/docker.sh imports is busybox alone.
  const node = await c.exec('command -v npx node 2>/dev/null; true');
  if (!node.stdout.includes('npx')) {
    t.comment(`the npx launch in the container is not tested: image ${IMAGE} has no node/npx (found: "${node.stdout.trim()}"); .ci/docker.sh builds it from busybox-static alone`);
    return;
  }
  const version = await c.exec(`npm_config_offline=true npm_config_cache=/tmp/.npm npx --version`);
  t.equal(version.exitCode, 0, `npx runs offline in the container: ${version.stdout}${version.stderr}`);
});
