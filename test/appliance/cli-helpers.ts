import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deadline, waitFor as waitForCondition } from '../helpers/wait.js';

// The built CLI, as a sysadmin runs it (npm test builds first).
export const BIN = join(process.cwd(), 'bin', 'run.js');

function newest(dir: string, ext: RegExp): number {
  let m = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) m = Math.max(m, newest(p, ext));
    else if (ext.test(e.name)) m = Math.max(m, statSync(p).mtimeMs);
  }
  return m;
}

/**
 * These tests run dist/ (what `agentsvc` runs): a dist/ older than src/ would test old code and
 * pass or fail for the wrong reason, so it is refused with what to do.
 */
export function assertFreshBuild() {
  const src = newest(join(process.cwd(), 'src'), /\.ts$/);
  const dist = existsSync(join(process.cwd(), 'dist', 'src')) ? newest(join(process.cwd(), 'dist', 'src'), /\.js$/) : 0;
  if (dist < src) throw new Error('dist/ is older than src/: run `npm run build` (npm test does) before the CLI tests');
}

export const baseEnv = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('AGENTSVC_') || k === 'DATABASE_URL') delete env[k];
  return env;
};

export function cli(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...baseEnv(), ...env }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export async function up(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; out: () => string }> {
  const child = spawn(process.execPath, [BIN, 'up', '--port', '0'], { env: { ...baseEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 90s: ${out}`)), 90_000);
    child.stdout!.on('data', () => {
      const m = /agentsvc listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`up exited ${code}: ${out}`));
    });
  });
  return { child, url, out: () => out };
}

/** Send `signal`; resolves with the exit code. Still running after `timeoutMs`: SIGKILLed, and the call fails saying so. */
export function stop(child: ChildProcess, signal: NodeJS.Signals, timeoutMs = 60_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill(signal);
  return deadline(exited, timeoutMs, `up (pid ${child.pid}) to exit after ${signal}`).catch((e) => {
    child.kill('SIGKILL');
    throw e;
  });
}

export function postgresRunningIn(dir: string): boolean {
  const r = spawnSync('pgrep', ['-f', `postgres -D ${dir}`], { encoding: 'utf8' });
  return r.stdout.trim().length > 0;
}

/** The postmaster's pid from the data directory's lock file (0 when there is none). */
export function postmasterPid(dataDir: string): number {
  const file = join(dataDir, 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : 0;
}

/** A pid that runs and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\S+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

/** Whether `cond` holds within `ms` (polled every 100 ms). */
export async function waitFor(cond: () => boolean, ms = 20_000): Promise<boolean> {
  return waitForCondition(cond, { timeoutMs: ms, everyMs: 100 }).then(
    () => true,
    () => cond(),
  );
}


/** A fresh AGENTSVC_HOME (removed at teardown), its env and the embedded PostgreSQL's data folder. */
export function freshHome(t: { teardown(fn: () => unknown): void }) {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-crash-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  return { home, env: { AGENTSVC_HOME: home }, dataDir: join(home, 'db', 'data') };
}

/** GET /api/auth/me with `key`: 200 once the server answers with the data it had. */
export const me = (url: string, key: string) => fetch(url + '/api/auth/me', { headers: { authorization: `Bearer ${key}` } });
