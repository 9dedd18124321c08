import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat, statfs } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import type { RunnerCheck } from '../../../runners/types.js';

/**
 * The environment checks behind GET /api/env/check and `agentsvc doctor`. Each check is a small
 * function over explicit dependencies, so the CLI can run the same ones locally when the service
 * is down. A check never throws and never takes more than CHECK_TIMEOUT_MS.
 */

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  id: string;
  status: CheckStatus;
  message: string;
  /** What to do about a warn or fail; null when ok. */
  fix: string | null;
}

export interface CheckDeps {
  home: string;
  runnerKind: 'local' | 'docker';
  allowUnconfined: boolean;
  dockerHost?: string;
  /** Resolves when the database answers a query. */
  database?: () => Promise<void>;
  /** The runner's own probe (runner.check()). */
  runner?: () => Promise<RunnerCheck>;
  /** Who asked (GET /api/env/check): checks of per-user state show a non-admin their own only. */
  viewer?: { userId: string; admin: boolean };
}

export interface Check {
  id: string;
  run(deps: CheckDeps): Promise<CheckResult>;
}

export const CHECK_TIMEOUT_MS = 3000;
const MiB = 1024 * 1024;
/** Below these free bytes in AGENTSVC_HOME: fail, warn. */
export const DISK_FAIL_BYTES = 200 * MiB;
export const DISK_WARN_BYTES = 2048 * MiB;

const result = (id: string, status: CheckStatus, message: string, fix: string | null = null): CheckResult => ({ id, status, message, fix: status === 'ok' ? null : fix });
const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e));

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** First line of a command's output, or null when it cannot run. */
function firstLine(cmd: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    let out = '';
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.once('error', () => resolve(null));
    child.once('close', (code) => resolve(code === 0 ? (out.trim().split('\n')[0] ?? '') : null));
  });
}

/** GET /_ping of the Docker daemon at DOCKER_HOST (unix socket path or tcp://host:port). */
function dockerPing(dockerHost = '/var/run/docker.sock'): Promise<void> {
  const target = dockerHost.startsWith('tcp://') || dockerHost.startsWith('http://') ? new URL(dockerHost.replace(/^tcp:/, 'http:')) : null;
  const socketPath = target ? undefined : dockerHost.replace(/^unix:\/\//, '');
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, host: target?.hostname, port: target?.port, path: '/_ping', method: 'GET', timeout: CHECK_TIMEOUT_MS }, (res) => {
      res.resume();
      if (res.statusCode === 200) resolve();
      else reject(new Error(`docker daemon answered ${res.statusCode}`));
    });
    req.once('timeout', () => req.destroy(new Error('docker daemon did not answer')));
    req.once('error', reject);
    req.end();
  });
}

export const databaseCheck: Check = {
  id: 'database',
  async run(d) {
    if (!d.database) return result('database', 'warn', 'not checked (no database connection here)', 'run `agentsvc up` and `agentsvc doctor` again');
    try {
      await d.database();
      return result('database', 'ok', 'PostgreSQL answers');
    } catch (e) {
      return result('database', 'fail', `PostgreSQL does not answer: ${errMsg(e)}`, 'check DATABASE_URL, or unset it to use the embedded PostgreSQL');
    }
  },
};

export const runnerCheck: Check = {
  id: 'runner',
  async run(d) {
    if (!d.runner) return result('runner', 'warn', `${d.runnerKind} runner not probed`, 'run `agentsvc up` and `agentsvc doctor` again');
    try {
      const c = await d.runner();
      if (c.error || !c.ok) return result('runner', 'fail', `${d.runnerKind} runner unavailable: ${c.error ?? c.warning ?? 'probe failed'}`, d.runnerKind === 'docker' ? 'start Docker, or set AGENTSVC_RUNNER=local' : 'install bubblewrap, or set AGENTSVC_ALLOW_UNCONFINED=1');
      if (c.warning) {
        const fix = /bubblewrap/i.test(c.warning) && /not found|missing|unavailable/i.test(c.warning) ? 'install bubblewrap (apt-get install bubblewrap) so that commands run confined' : 'follow the advice in the message';
        return result('runner', 'warn', `${d.runnerKind} runner: ${c.warning}`, fix);
      }
      return result('runner', 'ok', `${d.runnerKind} runner: ${c.summary ?? 'ready'}`);
    } catch (e) {
      return result('runner', 'fail', `${d.runnerKind} runner probe failed: ${errMsg(e)}`, 'see the service log in AGENTSVC_HOME/logs');
    }
  },
};

/** bubblewrap for the local runner, the Docker daemon for the docker runner. */
export const sandboxCheck: Check = {
  id: 'sandbox',
  async run(d) {
    if (d.runnerKind === 'docker') {
      const where = d.dockerHost ?? '/var/run/docker.sock';
      try {
        await dockerPing(d.dockerHost);
        return result('sandbox', 'ok', `docker daemon answers at ${where}`);
      } catch (e) {
        return result('sandbox', 'fail', `docker daemon unreachable at ${where}: ${errMsg(e)}`, 'start Docker or set DOCKER_HOST');
      }
    }
    const version = await firstLine('bwrap', ['--version']);
    if (version) return result('sandbox', 'ok', `bubblewrap found (${version})`);
    if (d.allowUnconfined) return result('sandbox', 'warn', 'bubblewrap not found: commands run unconfined (AGENTSVC_ALLOW_UNCONFINED=1)', 'install bubblewrap (apt-get install bubblewrap)');
    return result('sandbox', 'fail', 'bubblewrap not found: tools that run commands refuse', 'install bubblewrap (apt-get install bubblewrap), or set AGENTSVC_ALLOW_UNCONFINED=1');
  },
};

export const diskCheck: Check = {
  id: 'disk',
  async run(d) {
    try {
      const s = await statfs(d.home);
      const free = s.bavail * s.bsize;
      const msg = `${Math.floor(free / MiB)} MiB free in ${d.home}`;
      if (free < DISK_FAIL_BYTES) return result('disk', 'fail', msg, 'free disk space or move AGENTSVC_HOME to a larger disk');
      if (free < DISK_WARN_BYTES) return result('disk', 'warn', msg, 'free disk space soon: the database and workspaces grow');
      return result('disk', 'ok', msg);
    } catch (e) {
      return result('disk', 'fail', `cannot read free space of ${d.home}: ${errMsg(e)}`, 'create AGENTSVC_HOME or point it at an existing folder');
    }
  },
};

/** AGENTSVC_HOME is a folder we own and can write, not open to others; admin.key is 0600. */
export const homeCheck: Check = {
  id: 'home',
  async run(d) {
    let st: Awaited<ReturnType<typeof stat>>;
    try {
      st = await stat(d.home);
    } catch {
      return result('home', 'warn', `${d.home} does not exist yet`, '`agentsvc up` creates it on first start');
    }
    if (!st.isDirectory()) return result('home', 'fail', `${d.home} is not a folder`, 'point AGENTSVC_HOME at a folder');
    try {
      await access(d.home, constants.W_OK | constants.X_OK);
    } catch {
      return result('home', 'fail', `${d.home} is not writable by this user`, `chown -R $(id -u) ${d.home}`);
    }
    if (st.mode & 0o022) return result('home', 'fail', `${d.home} is writable by others (mode ${(st.mode & 0o777).toString(8)})`, `chmod 700 ${d.home}`);
    const key = join(d.home, 'admin.key');
    const ks = await stat(key).catch(() => null);
    if (ks && ks.mode & 0o077) return result('home', 'fail', `${key} is readable by others (mode ${(ks.mode & 0o777).toString(8)})`, `chmod 600 ${key}`);
    // A root install lets its system users (postgres, agentsvc-sandbox) traverse the home through
    // its group (g=x, see src/platform/lib/system-user.ts): that is no read access, and chmod 700 would stop
    // the embedded database at the next start.
    if (st.mode & 0o067) return result('home', 'warn', `${d.home} is readable by others (mode ${(st.mode & 0o777).toString(8)})`, `chmod ${st.mode & 0o010 ? 710 : 700} ${d.home}`);
    return result('home', 'ok', `${d.home} is private and writable`);
  },
};

export const CHECKS: Check[] = [databaseCheck, runnerCheck, sandboxCheck, diskCheck, homeCheck];

/** One check, never throwing, never longer than CHECK_TIMEOUT_MS. */
export async function runCheck(c: Check, deps: CheckDeps): Promise<CheckResult> {
  try {
    return await withTimeout(c.run(deps), CHECK_TIMEOUT_MS, c.id);
  } catch (e) {
    return result(c.id, 'fail', errMsg(e), 'see the service log in AGENTSVC_HOME/logs');
  }
}

/** Run checks concurrently; `onResult` sees each as it finishes. Resolves with all, in CHECKS order. */
export async function runChecks(checks: Check[], deps: CheckDeps, onResult?: (r: CheckResult) => void): Promise<CheckResult[]> {
  return Promise.all(
    checks.map(async (c) => {
      const r = await runCheck(c, deps);
      onResult?.(r);
      return r;
    }),
  );
}
