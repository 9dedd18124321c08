import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io as connect, type Socket } from 'socket.io-client';
import { loadConfig, type Config } from '../../src/platform/config/index.js';
import { startService, type Service } from '../../src/service.js';
import { freshDatabaseUrl } from './db.js';
import { deadline } from './wait.js';

type T = { teardown(fn: () => unknown): void };

/** The longest a request of `app.api` may take (headers and body) before it fails. */
const API_TIMEOUT_MS = 120_000;
/** Starting the service (migrations included) and closing it (runs drained). */
const START_MS = 90_000;
const CLOSE_MS = 60_000;

export interface TestApp {
  service: Service;
  config: Config;
  url: string;
  home: string;
  adminKey: string;
  /** fetch against the app with the admin key (or `key`) as bearer. */
  api(path: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>;
  socket(key?: string, opts?: { autoConnect?: boolean }): Socket;
  newUser(username?: string): Promise<{ key: string; userId: string }>;
  /** Stop the service and start a new one on the same database and home (a server restart). */
  restart(): Promise<void>;
}

/**
 * Close the service within CLOSE_MS; past it the service stops what is left hard, and the test fails
 * naming what the shutdown was still waiting on (a hang would otherwise run into tap's timeout).
 */
async function stopBounded(service: Service, what: string): Promise<void> {
  const r = await service.stop(CLOSE_MS);
  if (r.outcome === 'hard') throw new Error(`${what} did not close within ${CLOSE_MS} ms: it was waiting on ${r.waiting ?? 'nothing it could name'} (stopped hard)`);
}

/** Boots the real service on a random port, on a fresh database; everything is closed at teardown. */
export async function build(t: T, env: Record<string, string> = {}): Promise<TestApp> {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-home-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const config = loadConfig({
    env: { AGENTSVC_HOME: home, AGENTSVC_PORT: '0', DATABASE_URL: await freshDatabaseUrl(t), OPENAI_API_KEY: 'test', ...env },
  });
  let service = await deadline(startService(config, { logFile: process.env.AGENTSVC_TEST_LOG ?? false }), START_MS, 'the service to start');
  t.teardown(() => stopBounded(service, 'the service'));
  const adminKey = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  const sockets: Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.disconnect()));
  const api: TestApp['api'] = (path, init = {}) => {
    const headers = new Headers(init.headers);
    const key = init.key === undefined ? adminKey : init.key;
    if (key) headers.set('authorization', `Bearer ${key}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    // Bounded unless the test brings its own signal: a hung route fails naming itself, not at tap's timeout.
    const method = init.method ?? 'GET';
    return fetch(service.url + path, { ...init, headers, body, signal: init.signal ?? AbortSignal.timeout(API_TIMEOUT_MS) }).catch((e: Error) => {
      if (e.name === 'TimeoutError') throw new Error(`${method} ${path}: no answer within ${API_TIMEOUT_MS} ms`);
      throw e;
    });
  };
  const app: TestApp = {
    service,
    config,
    url: service.url,
    home,
    adminKey,
    api,
    socket(key = adminKey, opts = {}) {
      const s = connect(app.url, { auth: { token: key }, transports: ['websocket'], reconnection: false, forceNew: true, ...opts });
      sockets.push(s);
      return s;
    },
    async newUser(username = `u${Math.random().toString(36).slice(2, 10)}`) {
      const { user } = await service.users.ensureUser(username);
      const { plaintext } = await service.users.createKey(user.id, 'test');
      return { key: plaintext, userId: user.id };
    },
    async restart() {
      sockets.forEach((s) => s.disconnect());
      await stopBounded(service, 'the service, for a restart');
      service = await deadline(startService({ ...config, port: 0 }, { logFile: process.env.AGENTSVC_TEST_LOG ?? false }), START_MS, 'the service to start again');
      t.teardown(() => stopBounded(service, 'the restarted service'));
      app.service = service;
      app.url = service.url;
    },
  };
  return app;
}
