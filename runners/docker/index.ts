/**
 * The docker runner: one long-lived container per user (found again by labels after a restart),
 * the user's workspace bind-mounted at /workspace, commands through the exec API. Containers are
 * limited (memory, CPU, pids), drop every capability, and are stopped when idle; the next command
 * starts them again. Path denies are mounts of the container (docs/policy-paths.md): when what
 * they cover changes, the container is made again. Containers never join a Docker network
 * (NetworkMode none, whatever the daemon's bridge and iptables settings): the egress proxy is
 * their only way out (network.ts). The daemon's client: daemon.ts; one command: exec.ts.
 */
import { createHash } from 'node:crypto';
import { chmod, chown, mkdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type Dockerode from 'dockerode';
import { RunnerUnavailableError, type Computer, type ComputerVersion, type PathPolicy, type Runner, type RunnerCheck } from '../types.js';
import { type Covered, coveredNow, emptyNodes } from '../path-denies.js';
import { removeUserFolder, resolveCwd, withTimeout, userFolderHostDir, foldersRoot, type Owner } from '../shared.js';
import { proxyEnv, type EgressPort } from '../egress.js';
import { describe, dockerFrom, status } from './daemon.js';
import { quickExec, runExec, type ExecTarget } from './exec.js';
import { containerNetwork, type Forwarded } from './network.js';
import { hasShared, LABEL_SHARED, sharedMount } from './shared.js';

export interface DockerRunnerOptions {
  /** AGENTSVC_HOME: workspaces live in <home>/workspaces/<user> on the daemon's host unless `workspaces` is given. */
  home: string;
  /** The workspaces root (AGENTSVC_WORKSPACES): several nodes of one install on one daemon share it, and their computers. */
  workspaces?: string;
  /** Image of the computers (runners/docker/Dockerfile builds the production one). */
  image: string;
  /** Default: dockerHost, else DOCKER_HOST, else the local socket. */
  docker?: Dockerode;
  /** unix:///path or tcp://host:port, used when `docker` is not given. */
  dockerHost?: string;
  memoryBytes?: number;
  nanoCpus?: number;
  pidsLimit?: number;
  /** Stop a container unused for this long (default 30 min). It restarts on the next command. */
  idleStopMs?: number;
  /** Network through the egress proxy (default false: none at all). */
  network?: boolean;
  /** The egress proxy (src/features/egress); default one that applies only the private-address rule. */
  egress?: EgressPort;
  /** Deadline of each control-plane API call (ping, list, create, start), default 5000 ms. */
  apiTimeoutMs?: number;
  /** Capabilities to add back after CapDrop ALL (default none). */
  capAdd?: string[];
}

export const LABEL_MANAGED = 'agentsvc.managed';
export const LABEL_USER = 'agentsvc.user';
/** Hash of the workspaces root: two installs sharing one daemon never adopt each other's containers; nodes of one install do. */
export const LABEL_HOME = 'agentsvc.home';
/** Hash of the denied entries the container's mounts cover (docs/policy-paths.md); absent: none. */
export const LABEL_DENIES = 'agentsvc.denies';
const ROOT = '/workspace';

interface Box extends Forwarded {
  id: string;
  hostRoot: string;
  owner?: Owner;
  /** LABEL_DENIES of the container: what its mounts cover. */
  denies: string;
  lastUsed: number;
  busy: number;
  stopped: boolean;
  /** Start/stop transitions, one after the other. */
  chain: Promise<void>;
}

export function createDockerRunner(opts: DockerRunnerOptions): Runner {
  const docker = opts.docker ?? dockerFrom(opts.dockerHost);
  const where = describe(docker);
  const root = foldersRoot(opts);
  const homeTag = createHash('sha256').update(root).digest('hex').slice(0, 12);
  const apiMs = opts.apiTimeoutMs ?? 5000;
  const idleStopMs = opts.idleStopMs ?? 30 * 60 * 1000;
  const boxes = new Map<string, Promise<Box>>();
  /** Users whose container is being made again for changed path denies. */
  const remaking = new Map<string, Promise<Box>>();
  let pathPolicy: PathPolicy | null = null;
  const running = new Set<() => Promise<void>>();
  let sweeper: NodeJS.Timeout | null = null;
  const api = <T>(p: Promise<T>, what: string) => withTimeout(p, apiMs, what);
  const target = (box: Box): ExecTarget => ({ docker, container: box.container, api, running });
  const net = containerNetwork({ enabled: !!opts.network, docker, egress: opts.egress, inspect: (c) => api(c.inspect(), 'inspect container') });

  async function reachable(): Promise<void> {
    try {
      await api(docker.ping(), 'ping');
    } catch (e) {
      throw new RunnerUnavailableError(`docker daemon unreachable at ${where}: ${e.message}`);
    }
  }

  async function findContainers(userId: string): Promise<Dockerode.ContainerInfo[]> {
    const label = [`${LABEL_MANAGED}=1`, `${LABEL_USER}=${userId}`, `${LABEL_HOME}=${homeTag}`];
    return api(docker.listContainers({ all: true, filters: { label } }), 'list containers');
  }

  async function startIt(container: Dockerode.Container): Promise<void> {
    // 304: already running, which is what we want.
    await api(container.start(), 'start container').catch((e) => {
      if (status(e) !== 304) throw e;
    });
  }

  /** The entries the user's path denies cover now, and their hash ('' for none). */
  async function denied(userId: string, hostRoot: string): Promise<{ covered: Covered[]; tag: string }> {
    if (!pathPolicy) return { covered: [], tag: '' };
    const covered = await coveredNow(await realpath(hostRoot), userId, pathPolicy);
    const tag = covered.length ? createHash('sha256').update(JSON.stringify(covered.map((c) => [c.rel, c.dir, c.access]).sort())).digest('hex').slice(0, 16) : '';
    return { covered, tag };
  }

  /**
   * Mounts over the denied entries (docs/policy-paths.md): an empty mode-000 node, read-only, over
   * each entry denied whole (a folder: entries made in it later are denied too); the entry itself
   * read-only for a write deny. Made while no container of the user runs, so no process inside can
   * swap a link into a path between the walk and the daemon's mount.
   */
  async function coverMounts(hostRoot: string, covered: Covered[]): Promise<Dockerode.MountSettings[]> {
    if (!covered.length) return [];
    const nodes = await emptyNodes(join(root, '.sandbox'));
    const real = await realpath(hostRoot);
    return covered.map((c) => ({
      Type: 'bind' as const,
      Source: c.access === 'write' ? join(real, c.rel) : c.dir ? nodes.dir : nodes.file,
      Target: `${ROOT}/${c.rel}`,
      ReadOnly: true,
    }));
  }

  async function create(userId: string, hostRoot: string, deny: { covered: Covered[]; tag: string }): Promise<Dockerode.Container> {
    const memory = opts.memoryBytes ?? 2048 * 1024 * 1024;
    const mounts = [await sharedMount(opts.home), ...(await coverMounts(hostRoot, deny.covered))];
    try {
      return await api(
        docker.createContainer({
          name: `agentsvc-${homeTag}-${userId}`,
          Image: opts.image,
          // Our own keep-alive, whatever the image's entrypoint; busybox sh has no `sleep infinity`.
          Entrypoint: ['sh', '-c'],
          Cmd: ['while :; do sleep 3600; done'],
          WorkingDir: ROOT,
          Labels: { [LABEL_MANAGED]: '1', [LABEL_USER]: userId, [LABEL_HOME]: homeTag, [LABEL_SHARED]: '1', ...(deny.tag ? { [LABEL_DENIES]: deny.tag } : {}) },
          HostConfig: {
            Binds: [`${hostRoot}:${ROOT}`],
            Mounts: mounts,
            Memory: memory,
            MemorySwap: memory,
            NanoCpus: opts.nanoCpus ?? 1e9,
            PidsLimit: opts.pidsLimit ?? 512,
            CapDrop: ['ALL'],
            CapAdd: opts.capAdd ?? [],
            SecurityOpt: ['no-new-privileges'],
            Privileged: false,
            // Never a Docker network: the egress proxy's port is forwarded in by pasta (see attach).
            NetworkMode: 'none',
            // tini as pid 1 reaps what killed commands leave behind.
            Init: true,
          },
        }),
        'create container',
      );
    } catch (e) {
      if (status(e) === 404) throw new RunnerUnavailableError(`image ${opts.image} not found on the docker daemon at ${where}: build it from runners/docker/Dockerfile`);
      if (status(e) === 409) {
        // Another service process created it a moment ago: adopt that one.
        const [found] = await findContainers(userId);
        if (found) return docker.getContainer(found.Id);
      }
      throw e;
    }
  }

  /**
   * With a non-root image user (the production image's `agent`) and a root service, hand the
   * workspace folder to that user so commands can write in it; files the service writes later
   * are handed over by writeFile.
   */
  async function ownerOf(box: Box): Promise<Owner | undefined> {
    if (process.getuid?.() !== 0) return undefined;
    const r = await quickExec(target(box), ['sh', '-c', 'id -u; id -g']);
    const [uid, gid] = r.stdout.trim().split('\n').map(Number);
    if (r.code !== 0 || !Number.isInteger(uid) || !Number.isInteger(gid) || uid === 0) return undefined;
    if ((await stat(box.hostRoot)).uid !== uid) await chown(box.hostRoot, uid, gid);
    return { uid, gid };
  }

  function box(userId: string): Promise<Box> {
    let p = boxes.get(userId);
    if (p) return p;
    p = (async () => {
      await reachable();
      const hostRoot = userFolderHostDir(root, userId);
      // Private: the daemon binds the workspace; nobody else on the host needs to list or enter it.
      await mkdir(root, { recursive: true, mode: 0o700 });
      await chmod(root, 0o700);
      await mkdir(hostRoot, { recursive: true, mode: 0o700 });
      let found: Dockerode.ContainerInfo | undefined = (await findContainers(userId))[0];
      if (found && (found.HostConfig?.NetworkMode !== 'none' || !hasShared(found))) {
        // Made by an earlier version on a Docker network (it would route around the proxy) or
        // without <home>/shared: made again (the workspace is a bind mount and stays).
        await api(docker.getContainer(found.Id).remove({ force: true }), 'remove container').catch((e) => {
          if (status(e) !== 404 && status(e) !== 409) throw e;
        });
        found = undefined;
      }
      let deny = await denied(userId, hostRoot);
      if (found && (found.Labels[LABEL_DENIES] ?? '') !== deny.tag) {
        // Its mounts cover other entries than the rules deny now: made again (see exec).
        await removeAll(userId, false);
        found = undefined;
        deny = await denied(userId, hostRoot);
      }
      const container = found ? docker.getContainer(found.Id) : await create(userId, hostRoot, deny);
      await startIt(container);
      const b: Box = { id: container.id, container, hostRoot, denies: found ? (found.Labels[LABEL_DENIES] ?? '') : deny.tag, lastUsed: Date.now(), busy: 0, stopped: false, chain: Promise.resolve() };
      await net.attach(b, userId);
      b.owner = await ownerOf(b);
      armSweeper();
      return b;
    })();
    boxes.set(userId, p);
    // A failed attempt is not cached: the next acquire tries again (daemon back, image built).
    p.catch(() => boxes.get(userId) === p && boxes.delete(userId));
    return p;
  }

  function ensureRunning(b: Box, userId: string): Promise<void> {
    if (!b.stopped) return b.chain;
    b.stopped = false;
    const started = b.chain.then(() => startIt(b.container)).then(() => net.attach(b, userId));
    b.chain = started.catch(() => {
      b.stopped = true;
    });
    return started;
  }

  function armSweeper() {
    if (sweeper) return;
    const every = Math.max(250, Math.min(idleStopMs / 2, 60_000));
    sweeper = setInterval(async () => {
      for (const p of boxes.values()) {
        const b = await p.catch(() => null);
        if (!b || b.stopped || b.busy > 0 || Date.now() - b.lastUsed < idleStopMs) continue;
        b.stopped = true;
        b.chain = b.chain.then(() => api(b.container.stop({ t: 1 }), 'stop container').then(() => undefined, () => undefined)).then(() => net.unforward(b));
      }
    }, every);
    sweeper.unref();
  }

  /**
   * The user's box with mounts covering what the path denies cover now. When that changed, the
   * container is removed (its processes end: a running command, background task or MCP server of
   * the user) and made again with the new mounts, one change at a time per user.
   */
  async function coveredBox(userId: string): Promise<Box> {
    const pending = remaking.get(userId);
    if (pending) return pending;
    const b = await box(userId);
    if (!pathPolicy) return b;
    const { tag } = await denied(userId, b.hostRoot);
    if (tag === b.denies) return b;
    if (remaking.has(userId)) return remaking.get(userId)!;
    const again = (async () => {
      await removeAll(userId);
      return box(userId);
    })().finally(() => remaking.delete(userId));
    remaking.set(userId, again);
    return again;
  }

  async function exec(userId: string, command: string, o: Parameters<Computer['exec']>[1] = {}) {
    for (let attempt = 0; ; attempt++) {
      // After a reset the next command gets a fresh computer (and workspace folder) again.
      const b = await coveredBox(userId);
      const cwd = await resolveCwd(b.hostRoot, ROOT, o.cwd);
      let cred: { release(): void; user: string } | null = null;
      b.busy++;
      try {
        await ensureRunning(b, userId);
        // The computer's listener is shared: the exec's credential (in the proxy URL) names it
        // exactly; clients that send none are taken for the newest exec.
        const who = { userId, sessionId: o.origin?.sessionId ?? null, toolCallId: o.origin?.toolCallId ?? null };
        b.lease?.identify(who);
        cred = b.lease?.credential(who) ?? null;
        return await runExec(target(b), command, cwd.inner, o, b.lease && cred ? proxyEnv(b.lease.port, cred.user) : []);
      } catch (e) {
        // Stopped or removed behind our back (docker stop/rm, daemon restart): recover once.
        if (attempt > 0 || (status(e) !== 409 && status(e) !== 404)) throw e;
        if (status(e) === 409) b.stopped = true;
        else boxes.delete(userId);
      } finally {
        cred?.release();
        b.busy--;
        b.lastUsed = Date.now();
      }
    }
  }

  async function removeAll(userId: string, forget = true): Promise<number> {
    if (forget) {
      const gone = boxes.get(userId);
      boxes.delete(userId);
      void gone?.then(net.detach, () => {});
    }
    const list = await findContainers(userId);
    let removed = 0;
    for (const c of list) {
      try {
        await api(docker.getContainer(c.Id).remove({ force: true }), 'remove container');
        removed++;
      } catch (e) {
        // Gone already, or being removed by a reset at the same moment: the outcome asked for.
        if (status(e) !== 404 && status(e) !== 409) throw e;
      }
    }
    return removed;
  }

  const versionName = (name: string, id: string) => `${name}@${id.replace(/^sha256:/, '').slice(0, 12)}`;

  const runner: Runner = {
    kind: 'docker',
    computerRoot: ROOT,
    setPathPolicy(policy) {
      pathPolicy = policy;
    },
    async check(): Promise<RunnerCheck> {
      try {
        await reachable();
      } catch (e) {
        return { ok: false, error: e.message };
      }
      try {
        await api(docker.getImage(opts.image).inspect(), 'inspect image');
      } catch (e) {
        const why = status(e) === 404 ? 'not found' : e.message;
        return { ok: false, error: `image ${opts.image} ${why} on the docker daemon at ${where}: build it from runners/docker/Dockerfile` };
      }
      if (net.refusal) return { ok: true, warning: `AGENTSVC_RUNNER_NETWORK: ${net.refusal}; commands get no network`, summary: 'containers without network' };
      return { ok: true, summary: `containers with ${opts.network ? 'network only through the egress proxy' : 'no network'}` };
    },
    async acquire(userId): Promise<Computer> {
      const b = await box(userId);
      return {
        userId,
        root: ROOT,
        owner: b.owner,
        exec: (command, o) => exec(userId, command, o),
      };
    },
    async reset(userId) {
      const hostRoot = userFolderHostDir(root, userId);
      await reachable();
      const removed = await removeAll(userId);
      return { removed_containers: removed, removed_volume: await removeUserFolder(hostRoot) };
    },
    async version(userId): Promise<ComputerVersion> {
      userFolderHostDir(root, userId);
      await reachable();
      const image = await api(docker.getImage(opts.image).inspect(), 'inspect image').catch(() => null);
      const [c] = await findContainers(userId);
      const target_version = image ? versionName(opts.image, image.Id) : `${opts.image} (not found)`;
      if (!c) return { upgrade_available: false, reason: 'no computer yet: it will be created on the configured image', current_version: '', target_version };
      const current_version = versionName(c.Image, c.ImageID);
      if (!image) return { upgrade_available: false, reason: `image ${opts.image} not found on the docker daemon`, current_version, target_version };
      if (image.Id === c.ImageID) return { upgrade_available: false, reason: 'the computer runs the configured image', current_version, target_version };
      return { upgrade_available: true, reason: 'the configured image differs from the computer\'s: upgrade recreates it, keeping the workspace', current_version, target_version };
    },
    async upgrade(userId) {
      userFolderHostDir(root, userId);
      await reachable();
      const removed = await removeAll(userId);
      await box(userId);
      return { removed_containers: removed, removed_volume: false };
    },
    async close() {
      if (sweeper) clearInterval(sweeper);
      sweeper = null;
      await Promise.all([...running].map((kill) => kill()));
      for (const p of boxes.values()) await p.then(net.detach, () => {});
      net.close();
    },
  };
  return runner;
}

