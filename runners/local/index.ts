/**
 * The local runner: tools run as subprocesses of the service in <home>/workspaces/<user>, each one
 * confined by bubblewrap (runners/local/sandbox.ts says what the sandbox sees). Where bubblewrap
 * cannot run, commands are refused with a tool error naming the cause, unless the operator allowed
 * unconfined commands (AGENTSVC_ALLOW_UNCONFINED=1); check() says which it is (found once by
 * runners/local/probe.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { chmod, lchown, lstat, mkdir, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Computer, ExecOptions, ExecResult, PathPolicy, Runner } from '../types.js';
import { type Covered, coveredNow, emptyNodes, openExact, outerFirst } from '../path-denies.js';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  OutputCollector,
  SandboxRefusal,
  checkUserEnv,
  feedStdin,
  finishResult,
  removeUserFolder,
  resolveCwd,
  watchdog,
  userFolderHostDir,
  type Owner,
} from '../shared.js';
import { BWRAP_ENV, DEFAULT_LIMITS, SANDBOX_PATH, confineArgs, groupFile, hostIdentity, limitArgs, passwdFile, type SandboxLimits } from './sandbox.js';
import { attachNetwork } from './net.js';
import { onPath, type Probe, probeSandbox } from './probe.js';
import { proxyEnv, type EgressIdentity, type EgressLease, type EgressPort } from '../egress.js';
import { addressOnlyEgress } from '../../src/features/egress/proxy.js';

export interface LocalRunnerOptions {
  /** AGENTSVC_HOME: workspaces live in <home>/workspaces/<user> unless `workspaces` is given. */
  home: string;
  /** The workspaces root (AGENTSVC_WORKSPACES), e.g. shared storage for several nodes. */
  workspaces?: string;
  /** Give confined commands network access, through the egress proxy only (default false). */
  network?: boolean;
  /** The egress proxy (src/features/egress); default one that applies only the private-address rule. */
  egress?: EgressPort;
  /** bwrap binary; undefined = look it up on PATH, null = never confine. */
  bwrapPath?: string | null;
  /** Run commands unconfined where bubblewrap cannot run, instead of refusing them (default false). */
  allowUnconfined?: boolean;
  limits?: Partial<SandboxLimits>;
}

/** Where `<home>/shared` appears in every confined command (read-only). */
export const SHARED_MOUNT = '/opt/agentsvc';

/** After a kill, how long to wait for stragglers (e.g. a setsid'd child) to let go of the pipes. */
const KILL_GRACE_MS = 2000;
/** Child fds of a confined command (stdio 0-2 first); read-only binds of write denies follow from `denies`. */
const FD = { passwd: 3, group: 4, workspace: 5, info: 6, block: 7, denies: 8 };

/**
 * Hand a workspace made by an earlier version (or by root) to the sandbox's host uid, all of it.
 * Through descriptors: each folder opened O_NOFOLLOW and chowned by its descriptor, every other
 * entry lchown'ed through its folder's descriptor, so a folder swapped for a link by a command
 * running meanwhile is never followed (a chown by path would hand a host folder to the sandbox).
 */
async function chownTree(dir: string, o: Owner): Promise<void> {
  const fh = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(() => null);
  if (!fh) return;
  try {
    await fh.chown(o.uid, o.gid);
    const self = `/proc/self/fd/${fh.fd}`;
    for (const e of await readdir(self, { withFileTypes: true })) {
      if (e.isDirectory()) await chownTree(`${self}/${e.name}`, o);
      else await lchown(`${self}/${e.name}`, o.uid, o.gid).catch(() => {});
    }
  } finally {
    await fh.close();
  }
}

export function createLocalRunner(opts: LocalRunnerOptions): Runner {
  const network = opts.network ?? false;
  const limits: SandboxLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const running = new Map<string, Set<ChildProcess>>();
  const id = hostIdentity();
  // A root service hands workspaces to the unprivileged uid bubblewrap runs as (see hostIdentity);
  // the probe lets it traverse to the workspaces, or refuses commands: never host root.
  const owner: Owner | undefined = id.root ? { uid: id.uid, gid: id.gid } : undefined;
  const spawnId: { uid?: number; gid?: number } = id.root ? { uid: id.uid, gid: id.gid } : {};
  // The first shell found wins: bash -l gives tools the login PATH they expect; sh is the fallback.
  const bash = onPath('bash');
  const shell = bash ? [bash, '-lc'] : [onPath('sh') ?? '/bin/sh', '-c'];
  const prlimit = onPath('prlimit');
  let probed: Promise<Probe> | null = null;
  let pathPolicy: PathPolicy | null = null;
  let empty: Promise<{ file: string; dir: string }> | null = null;
  let ownEgress: ReturnType<typeof addressOnlyEgress> | null = null;
  const egress = (): EgressPort => opts.egress ?? (ownEgress ??= addressOnlyEgress());

  function innerEnv(hostRoot: string, user: [string, string][]): [string, string][] {
    const base: Record<string, string> = { PATH: SANDBOX_PATH, HOME: hostRoot, USER: 'agent', LOGNAME: 'agent', SHELL: shell[0], LANG: 'C.UTF-8', TERM: 'dumb' };
    for (const [k, v] of user) base[k] = v;
    return Object.entries(base);
  }

  /** The command line inside: resource limits first, then the shell. */
  function inner(command: string): string[] {
    return [...(prlimit ? limitArgs(prlimit, limits) : []), ...shell, command];
  }

  function probe(): Promise<Probe> {
    probed ??= probeSandbox({
      ...opts,
      network,
      prlimit,
      root: id.root,
      owner,
      tryCommand: (p, dir) => spawnOne(p, { userId: '.probe', sessionId: null, toolCallId: null }, dir, dir, 'true', [], { timeoutMs: 10_000, maxOutputBytes: 4096 }),
    });
    return probed;
  }

  function killGroup(child: ChildProcess) {
    try {
      // Negative pid: the whole process group (spawned detached, so the child leads its own).
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }

  /**
   * bubblewrap arguments covering the denied entries (docs/policy-paths.md), after the workspace
   * bind: an empty mode-000 node, read-only, over each entry denied whole (a folder: so entries
   * made in it later are denied too); the entry itself read-only for a write deny, bound from a
   * descriptor checked to be that very path. `fds` get the descriptors to pass (closed by the caller).
   */
  async function coverArgs(hostRoot: string, covered: Covered[], fds: number[]): Promise<string[]> {
    if (!covered.length) return [];
    const nodes = await (empty ??= emptyNodes(join((await probe()).root, '.sandbox')).catch((e) => {
      empty = null;
      throw e;
    }));
    const args: string[] = [];
    for (const c of outerFirst(covered)) {
      const dest = join(hostRoot, c.rel);
      if (c.access === 'all') args.push('--ro-bind', c.dir ? nodes.dir : nodes.file, dest);
      else {
        fds.push(openExact(hostRoot, c.rel));
        args.push('--ro-bind-fd', String(FD.denies + fds.length - 1), dest);
      }
    }
    return args;
  }

  /** Start one command, confined when the probe found bubblewrap; the caller tracks the child. */
  function start(p: Probe, hostRoot: string, cwd: string, command: string, user: [string, string][], withStdin = false, covers: string[] = [], coverFds: number[] = []): ChildProcess {
    const env = innerEnv(hostRoot, user);
    const stdin = withStdin ? 'pipe' : 'ignore';
    if (!p.bwrap) {
      const [file, ...args] = inner(command);
      // Unconfined (allowed by the operator): still a scrubbed environment and the limits.
      return spawn(file, args, { cwd, env: Object.fromEntries(env), detached: true, stdio: [stdin, 'pipe', 'pipe'], ...spawnId });
    }
    // The workspace goes in as an open fd: bwrap (nobody, for a root service) needs no path to it.
    const ws = openSync(hostRoot, constants.O_RDONLY | constants.O_DIRECTORY);
    // <home>/shared, when there, read-only at /opt/agentsvc: what the service fetched on the host
    // for every computer (npm packages of MCP servers' npx launchers, docs/mcp-servers.md).
    const shared = openShared();
    try {
      const extra = p.net ? ['--info-fd', String(FD.info), '--block-fd', String(FD.block)] : [];
      const share = shared === null ? [] : ['--ro-bind-fd', String(FD.denies + coverFds.length), SHARED_MOUNT];
      const args = confineArgs({ root: hostRoot, cwd, limits, fds: FD, env, extra, covers: [...covers, ...share] });
      const tail = shared === null ? coverFds : [...coverFds, shared];
      const stdio = [stdin, 'pipe', 'pipe', 'pipe', 'pipe', ws, ...(p.net ? ['pipe', 'pipe'] : tail.length ? ['ignore', 'ignore'] : []), ...tail] as ('ignore' | 'pipe' | number)[];
      const child = spawn(p.bwrap, [...args, ...inner(command)], { cwd: '/', env: BWRAP_ENV, detached: true, stdio, ...spawnId });
      for (const [fd, text] of [
        [FD.passwd, passwdFile(hostRoot)],
        [FD.group, groupFile()],
      ] as const) {
        const w = child.stdio[fd] as NodeJS.WritableStream & { on(e: 'error', f: () => void): void };
        w.on('error', () => {});
        w.end(text);
      }
      return child;
    } finally {
      closeSync(ws);
      if (shared !== null) closeSync(shared);
    }
  }

  function openShared(): number | null {
    try {
      return openSync(join(opts.home, 'shared'), constants.O_RDONLY | constants.O_DIRECTORY);
    } catch {
      return null;
    }
  }

  /** With network: once bwrap reports its pid, forward the proxy's port into it, then let it go on. */
  async function connect(p: Probe, child: ChildProcess, port: number): Promise<ChildProcess> {
    const info = child.stdio[FD.info] as NodeJS.ReadableStream;
    const pid = await new Promise<number>((done, fail) => {
      let text = '';
      info.on('data', (d: Buffer) => {
        text += d.toString();
        // The number must be complete: a read can end inside it ("child-pid": 1603|7).
        const m = /"child-pid"\s*:\s*(\d+)\s*[,}\n]/.exec(text);
        if (m) done(Number(m[1]));
      });
      info.on('error', () => {});
      info.on('end', () => fail(new Error(`bubblewrap did not report its pid: ${text}`)));
    });
    const pasta = await attachNetwork(p.net!, pid, id.root, port);
    const block = child.stdio[FD.block] as NodeJS.WritableStream & { on(e: 'error', f: () => void): void };
    block.on('error', () => {});
    block.end('1');
    return pasta;
  }

  async function spawnOne(
    p: Probe,
    who: EgressIdentity,
    hostRoot: string,
    cwd: string,
    command: string,
    user: [string, string][],
    o: ExecOptions,
    track?: Set<ChildProcess>,
    covered: Covered[] = [],
  ): Promise<ExecResult> {
    const started = Date.now();
    // A listener of the proxy for this command alone: its connections are judged and audited as its.
    const lease: EgressLease | null = p.net ? await egress().open(who) : null;
    const coverFds: number[] = [];
    let child: ChildProcess;
    try {
      child = start(p, hostRoot, cwd, command, lease ? [...user, ...proxyEnv(lease.port)] : user, o.stdin !== undefined, await coverArgs(hostRoot, covered, coverFds), coverFds);
    } catch (e) {
      lease?.close();
      throw e;
    } finally {
      // The child has its copies (spawn dup'ed them): ours are closed at once.
      for (const fd of coverFds) closeSync(fd);
    }
    track?.add(child);
    if (o.stdin !== undefined && child.stdin) void feedStdin(child.stdin, o.stdin);
    const out = new OutputCollector(o.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, o.onOutput);
    child.stdout!.on('data', (d: Buffer) => out.push('stdout', d));
    child.stderr!.on('data', (d: Buffer) => out.push('stderr', d));
    let grace: NodeJS.Timeout | undefined;
    let pasta: ChildProcess | null = null;
    const dog = watchdog(o, () => {
      killGroup(child);
      // Whatever escaped the group and still holds our pipes must not keep the caller waiting.
      grace = setTimeout(() => {
        for (const s of child.stdio) (s as { destroy?: () => void } | null)?.destroy?.();
      }, KILL_GRACE_MS);
    });
    try {
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((done, fail) => {
        let exit: [number | null, NodeJS.Signals | null] | null = null;
        child.once('error', fail);
        child.once('exit', (c, s) => (exit = [c, s]));
        child.once('close', (c, s) => done(exit ?? [c, s]));
      });
      if (p.net) {
        const connecting = connect(p, child, lease!.port);
        pasta = await Promise.race([connecting, exited.then(() => null)]).catch((e) => {
          killGroup(child);
          throw e;
        });
        // bwrap ended before pasta was attached: a pasta started after that is nobody's to stop,
        // and its open pipe kept the service's process alive (it hung a test file in CI).
        if (!pasta) connecting.then((late) => late.kill('SIGKILL')).catch(() => {});
      }
      const [code, signal] = await exited;
      return finishResult(out, dog, started, code, signal);
    } finally {
      dog.dispose();
      clearTimeout(grace);
      pasta?.kill('SIGKILL');
      lease?.close();
      track?.delete(child);
    }
  }

  async function exec(userId: string, hostRoot: string, command: string, o: ExecOptions = {}): Promise<ExecResult> {
    const p = await probe();
    if (p.refusal) throw new SandboxRefusal('SANDBOX_UNAVAILABLE', p.refusal);
    const user = checkUserEnv(o.env);
    // After a reset the next command gets a fresh workspace folder, as on the docker runner.
    await prepare(hostRoot);
    const cwd = await resolveCwd(hostRoot, hostRoot, o.cwd);
    const covered = pathPolicy ? await coveredNow(hostRoot, userId, pathPolicy) : [];
    // Unconfined, nothing could hold a path rule: fail closed rather than run as if there were none.
    if (covered.length && !p.bwrap) throw new SandboxRefusal('SANDBOX_UNAVAILABLE', `path rules deny ${covered.length} entries here, and commands run unconfined (no bubblewrap): commands are refused`);
    const mine = running.get(userId) ?? new Set();
    running.set(userId, mine);
    const who = { userId, sessionId: o.origin?.sessionId ?? null, toolCallId: o.origin?.toolCallId ?? null };
    return spawnOne(p, who, hostRoot, cwd.host, command, user, o, mine, covered);
  }

  /** The user's workspace: private (0700) and owned by the uid commands run as. */
  async function prepare(hostRoot: string): Promise<void> {
    await mkdir(hostRoot, { recursive: true, mode: 0o700 });
    const st = await lstat(hostRoot);
    if ((st.mode & 0o777) !== 0o700) await chmod(hostRoot, 0o700);
    if (owner && st.uid !== owner.uid) await chownTree(hostRoot, owner);
  }

  const runner: Runner = {
    kind: 'local',
    setPathPolicy(policy) {
      pathPolicy = policy;
    },
    async check() {
      return (await probe()).check;
    },
    async acquire(userId): Promise<Computer> {
      const hostRoot = userFolderHostDir((await probe()).root, userId);
      await prepare(hostRoot);
      // Local processes see the host filesystem, so the computer's root is the host folder itself.
      return {
        userId,
        root: hostRoot,
        owner,
        exec: (command, o) => exec(userId, hostRoot, command, o),
      };
    },
    async reset(userId) {
      const hostRoot = userFolderHostDir((await probe()).root, userId);
      for (const child of running.get(userId) ?? []) killGroup(child);
      return { removed_containers: 0, removed_volume: await removeUserFolder(hostRoot) };
    },
    async version() {
      return { upgrade_available: false, reason: 'local runner has no image', current_version: 'local', target_version: 'local' };
    },
    async upgrade() {
      return { removed_containers: 0, removed_volume: false };
    },
    async close() {
      for (const set of running.values()) for (const child of set) killGroup(child);
      ownEgress?.close();
    },
  };
  return runner;
}
