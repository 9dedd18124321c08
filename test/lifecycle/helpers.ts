import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as tcp, type Socket as TcpSocket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kill, startUp, type UpProcess } from '../helpers/cli.js';
import { deadline } from '../helpers/wait.js';

type T = { teardown(fn: () => unknown): void; match(found: unknown, want: RegExp): void };

/** A fresh home for one test file: its embedded PostgreSQL is created once, by the first `up`. */
export function freshHome(t: T, name: string) {
  const home = mkdtempSync(join(tmpdir(), `agentsvc-${name}-`));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  return {
    home,
    dataDir: join(home, 'db', 'data'),
    adminKey: () => readFileSync(join(home, 'admin.key'), 'utf8').trim(),
    /** `agentsvc up --port 0` on this home, killed at teardown if still there. */
    up: async (t: T, env: Record<string, string> = {}): Promise<UpProcess> => {
      const run = await startUp({ AGENTSVC_HOME: home, ...env });
      t.teardown(() => kill(run.child, 'SIGKILL'));
      return run;
    },
  };
}

/** The exit code, once the process has exited; fails naming the process when it has not within `timeoutMs`. */
export const exited = (run: UpProcess, timeoutMs = 60_000) =>
  deadline(
    new Promise<number | null>((r) => (run.child.exitCode !== null ? r(run.child.exitCode) : run.child.once('exit', (code) => r(code)))),
    timeoutMs,
    `up (pid ${run.child.pid}) to exit`,
  );

/**
 * A slow upload: the headers of a request, then one byte of its body every 500 ms. The HTTP
 * server cannot close while the request is in flight (until its 120 s request timeout; the body
 * guard's 8 s is between bytes), and Socket.IO's close waits for the HTTP server's, so a shutdown
 * waits on it. Answers once the server has taken the request (`100 Continue`).
 */
export async function slowUpload(t: T, url: string, key: string): Promise<TcpSocket> {
  const { hostname, port } = new URL(url);
  const sock = tcp({ host: hostname, port: Number(port) });
  sock.on('error', () => {});
  await deadline(new Promise((r) => sock.once('connect', r)), 10_000, 'the slow upload to connect');
  const taken = deadline(new Promise((r) => sock.once('data', r)), 10_000, 'the server to take the slow upload (100 Continue)');
  sock.write(
    `POST /api/sessions HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\nexpect: 100-continue\r\n\r\n`,
  );
  t.match(String(await taken), /^HTTP\/1.1 100 Continue/);
  const drip = setInterval(() => sock.write(' '), 500);
  sock.once('close', () => clearInterval(drip));
  t.teardown(() => sock.destroy());
  return sock;
}

export const refusal = (home: string, pid: number, state: string) =>
  `agentsvc: ${home} is locked by agentsvc up (pid ${pid}, ${state}); stop that \`agentsvc up\` first, or pass another --home\n`;
