import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { deadline } from './wait.js';

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

/**
 * Send `signal` and resolve when the process has exited. A process still there after `timeoutMs`
 * is SIGKILLed (nothing outlives the test) and the call fails naming what did not happen.
 */
export function kill(child: ChildProcess, signal: NodeJS.Signals, timeoutMs = 60_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  return deadline(exited, timeoutMs, `process ${child.pid} to exit after ${signal}`).catch((e) => {
    child.kill('SIGKILL');
    throw e;
  });
}

/** A client command of the built CLI: its output so far, and its exit code once it ends. */
export function runCli(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  // Bounded: a command that never exits fails the test naming it, and is killed.
  const done = deadline(exited, 90_000, `agentsvc ${args[0]} to exit`).catch((e) => {
    child.kill('SIGKILL');
    throw e;
  });
  return { child, out: () => out, err: () => err, done };
}
