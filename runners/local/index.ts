/**
 * The local runner: tools run as subprocesses of the service in <home>/workspaces/<user>. When
 * bubblewrap works, each command is confined (read-only host, writable workspace, fresh /tmp, own
 * pid namespace, no network unless allowed); otherwise commands run unconfined and check() says so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, realpath, rm } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import type { Computer, ExecOptions, ExecResult, Runner, RunnerCheck } from '../types.js';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  OutputCollector,
  finishResult,
  readWorkspaceFile,
  resolveCwd,
  watchdog,
  workspaceHostDir,
  writeWorkspaceFile,
} from '../shared.js';

export interface LocalRunnerOptions {
  /** AGENTSVC_HOME: workspaces live in <home>/workspaces/<user>. */
  home: string;
  /** Let confined commands reach the network (default false). Unconfined commands always can. */
  network?: boolean;
  /** bwrap binary; undefined = look it up on PATH, null = never confine. */
  bwrapPath?: string | null;
}

/** After a kill, how long to wait for stragglers (e.g. a setsid'd child) to let go of the pipes. */
const KILL_GRACE_MS = 2000;

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

function run(file: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e) => done({ code: null, stderr: e.message }));
    child.on('close', (code) => done({ code, stderr: stderr.trim() }));
  });
}

export function createLocalRunner(opts: LocalRunnerOptions): Runner {
  const network = opts.network ?? false;
  const running = new Map<string, Set<ChildProcess>>();
  // The first shell found wins: bash -l gives tools the login PATH they expect; sh is the fallback.
  const bash = onPath('bash');
  const shell = bash ? [bash, '-lc'] : [onPath('sh') ?? '/bin/sh', '-c'];
  let probed: Promise<{ bwrap: string | null; home: string; check: RunnerCheck }> | null = null;

  /**
   * Confinement for one command. Order matters in bwrap: the home folder (keys, database, other
   * users' workspaces) and /run (the Docker socket stays connectable on a read-only mount) are
   * hidden under empty tmpfs first, then only this user's workspace is bound back, writable.
   */
  function confineArgs(home: string, hostRoot: string, cwd: string): string[] {
    const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--tmpfs', '/run'];
    args.push('--tmpfs', home, '--bind', hostRoot, hostRoot, '--chdir', cwd);
    args.push('--unshare-pid', '--unshare-ipc', '--die-with-parent');
    if (!network) args.push('--unshare-net');
    return args;
  }

  function probe() {
    probed ??= (async () => {
      await mkdir(join(opts.home, 'workspaces'), { recursive: true });
      const home = await realpath(resolve(opts.home));
      const unconfined = (why: string) => ({ bwrap: null, home, check: { ok: true, warning: `${why}: tools run unconfined in the workspace` } });
      if (opts.bwrapPath === null) return unconfined('bubblewrap disabled');
      const bwrap = opts.bwrapPath ?? onPath('bwrap');
      if (!bwrap) return unconfined('bubblewrap not found');
      // Run the real thing once: bwrap may be installed yet refused (no user namespaces, seccomp).
      const ws = join(home, 'workspaces');
      const r = await run(bwrap, [...confineArgs(home, ws, ws), 'true'], 5000);
      if (r.code !== 0) return unconfined(`bubblewrap not usable (${r.stderr || `exit ${r.code}`})`);
      return { bwrap, home, check: { ok: true } as RunnerCheck };
    })();
    return probed;
  }

  function killGroup(child: ChildProcess) {
    try {
      // Negative pid: the whole process group (spawned detached, so the child leads its own).
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }

  async function exec(userId: string, hostRoot: string, command: string, o: ExecOptions = {}): Promise<ExecResult> {
    const started = Date.now();
    const { bwrap, home } = await probe();
    // After a reset the next command gets a fresh workspace folder, as on the docker runner.
    await mkdir(hostRoot, { recursive: true });
    const cwd = await resolveCwd(hostRoot, hostRoot, o.cwd);
    // A minimal environment: the service's own (API keys, DATABASE_URL) must not leak to tools.
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: hostRoot,
      USER: userInfo().username,
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      ...o.env,
    };
    const [file, ...args] = bwrap ? [bwrap, ...confineArgs(home, hostRoot, cwd.host), ...shell, command] : [...shell, command];
    const child = spawn(file, args, { cwd: cwd.host, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const mine = running.get(userId) ?? new Set();
    running.set(userId, mine.add(child));
    const out = new OutputCollector(o.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, o.onOutput);
    child.stdout!.on('data', (d: Buffer) => out.push('stdout', d));
    child.stderr!.on('data', (d: Buffer) => out.push('stderr', d));
    let grace: NodeJS.Timeout | undefined;
    const dog = watchdog(o, () => {
      killGroup(child);
      // Whatever escaped the group and still holds our pipes must not keep the caller waiting.
      grace = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, KILL_GRACE_MS);
    });
    try {
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done, fail) => {
        let exited: [number | null, NodeJS.Signals | null] | null = null;
        child.once('error', fail);
        child.once('exit', (c, s) => (exited = [c, s]));
        child.once('close', (c, s) => done(exited ?? [c, s]));
      });
      return finishResult(out, dog, started, code, signal);
    } finally {
      dog.dispose();
      clearTimeout(grace);
      mine.delete(child);
    }
  }

  const runner: Runner = {
    kind: 'local',
    async check() {
      return (await probe()).check;
    },
    async acquire(userId): Promise<Computer> {
      const hostRoot = workspaceHostDir((await probe()).home, userId);
      await mkdir(hostRoot, { recursive: true });
      // Local processes see the host filesystem, so the computer's root is the host folder itself.
      return {
        userId,
        root: hostRoot,
        hostRoot,
        exec: (command, o) => exec(userId, hostRoot, command, o),
        readFile: (path) => readWorkspaceFile(hostRoot, hostRoot, path),
        writeFile: (path, data) => writeWorkspaceFile(hostRoot, hostRoot, path, data),
      };
    },
    async reset(userId) {
      const hostRoot = workspaceHostDir((await probe()).home, userId);
      for (const child of running.get(userId) ?? []) killGroup(child);
      const existed = existsSync(hostRoot);
      await rm(hostRoot, { recursive: true, force: true });
      return { removed_containers: 0, removed_volume: existed };
    },
    async version() {
      return { upgrade_available: false, reason: 'local runner has no image', current_version: 'local', target_version: 'local' };
    },
    async upgrade() {
      return { removed_containers: 0, removed_volume: false };
    },
    async close() {
      for (const set of running.values()) for (const child of set) killGroup(child);
    },
  };
  return runner;
}
