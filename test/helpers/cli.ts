import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** The built CLI (`npm test` builds first), started the way a sysadmin runs it. */
export const BIN = join(process.cwd(), 'bin', 'run.js');

/** The environment without any AGENTSVC_* or DATABASE_URL of the test run itself. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('AGENTSVC_') || k === 'DATABASE_URL') delete env[k];
  return env;
}

export interface UpProcess {
  child: ChildProcess;
  url: string;
  /** Milliseconds from spawn to the listening line. */
  startMs: number;
  out: () => string;
}

/** `agentsvc up --port 0`; resolves at the listening line, rejects (with its output) on exit or after timeoutMs. */
export function startUp(env: Record<string, string>, timeoutMs = 90_000): Promise<UpProcess> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [BIN, 'up', '--port', '0'], { env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no listening line in ${timeoutMs} ms: ${out.slice(-2000)}`));
    }, timeoutMs);
    child.stdout!.on('data', () => {
      const m = /agentsvc listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], startMs: Date.now() - t0, out: () => out });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`up exited (${code ?? signal}) before listening: ${out.trim().slice(-2000)}`));
    });
  });
}

/** Send `signal` and resolve when the process has exited. */
export function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/** A client command of the built CLI: its output so far, and its exit code once it ends. */
export function runCli(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const done = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  return { child, out: () => out, err: () => err, done };
}
