import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io as connect, type Socket } from 'socket.io-client';
import tap from 'tap';
import { startFakeModel, type FakeModel, type Step } from '../fixtures/fake-model.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { deadline, type Api } from './chaos.js';
import { freshDatabaseUrl } from './db.js';
import { kill, startUp, type UpProcess } from './cli.js';
import { waitFor } from './wait.js';
import { missingCommand, needs } from './needs.js';


type Teardown = { teardown(fn: () => unknown): void };

/** A real `agentsvc up` process and how a client talks to it. */
export interface Running {
  up: UpProcess;
  key: string;
  api: Api;
  socket: () => Promise<Socket>;
}

/** Start `up` (SIGKILLed at teardown); the key is `key`, else the admin.key of its home. */
export async function boot(t: Teardown, env: Record<string, string>, key?: string): Promise<Running> {
  const up = await startUp(env);
  t.teardown(() => kill(up.child, 'SIGKILL'));
  const k = key ?? readFileSync(join(env.AGENTSVC_HOME, 'admin.key'), 'utf8').trim();
  return { up, key: k, api: apiOf(up.url, k), socket: () => socketTo(t, up.url, k) };
}

export function apiOf(url: string, key: string): Api {
  return (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key !== null) headers.set('authorization', `Bearer ${init.key ?? key}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
    return fetch(url + path, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body, signal: AbortSignal.timeout(10_000) });
  };
}

export async function socketTo(t: Teardown, url: string, key: string): Promise<Socket> {
  const s = connect(url, { auth: { token: key }, transports: ['websocket'], reconnection: false, forceNew: true });
  t.teardown(() => s.disconnect());
  await deadline(new Promise<void>((r) => s.once('connect', () => r())), 10_000, 'socket connect');
  return s;
}

/** A fake model answering by `router`, and a fresh AGENTSVC_HOME; both removed at teardown. */
export async function withModel(t: Teardown, router: Step): Promise<{ home: string; model: FakeModel; env: Record<string, string> }> {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = router;
  return { home: tempHome(t), model, env: modelEnv(model) };
}

export function modelEnv(model: FakeModel): Record<string, string> {
  return { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'test', AGENTSVC_MODEL: 'fake-model' };
}

export function tempHome(t: Teardown): string {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-node-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

/** A free local TCP port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Whether this machine can run a test that needs its own redis-server. When it cannot, the test is
 * failed under CI=true (CI must run it) and skipped with a printed reason elsewhere.
 */
export function redisServerFor(what: string): boolean {
  return !needs(tap, what, missingCommand('redis-server'));
}

/** A redis-server on `port` that the test can kill and start again. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await waitFor(() => spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG'), { timeoutMs: 5000, everyMs: 50, what: `redis-server on port ${port}` });
  return child;
}

/**
 * Two `up` nodes as docs/scale-out.md runs them: one fresh database, the Redis on `redisPort` and one
 * workspaces folder shared, each node with its own home. Node B shares the database, so user admin
 * exists: it uses the key node A wrote.
 */
export async function twoNodes(t: Teardown, model: FakeModel, redisPort: number, env: Record<string, string> = {}): Promise<{ a: Running; b: Running }> {
  const shared = {
    ...modelEnv(model),
    DATABASE_URL: await freshDatabaseUrl(t),
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    AGENTSVC_WORKSPACES: join(tempHome(t), 'shared-workspaces'),
    ...env,
  };
  const a = await boot(t, { ...shared, AGENTSVC_HOME: tempHome(t) });
  const b = await boot(t, { ...shared, AGENTSVC_HOME: tempHome(t) }, a.key);
  return { a, b };
}

export type Ev = { name: string; payload: any };

/** Every event of `sid` this socket receives. */
export function recorder(sock: Socket, sid: string): Ev[] {
  const got: Ev[] = [];
  sock.onAny((name, payload) => payload?.session_id === sid && got.push({ name, payload }));
  return got;
}

/** Wait for a condition the test's sockets fill in (20 ms polls), failing after `ms`. */
export const until = (what: string, ok: () => boolean, ms = 20_000) => waitFor(ok, { timeoutMs: ms, everyMs: 20, what });

