import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io as connect, type Socket } from 'socket.io-client';
import { loadConfig, type Config } from '../../src/platform/config/index.js';
import { startService, type Service } from '../../src/service.js';
import { freshDatabaseUrl } from './db.js';

type T = { teardown(fn: () => unknown): void };

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

/** Boots the real service on a random port, on a fresh database; everything is closed at teardown. */
export async function build(t: T, env: Record<string, string> = {}): Promise<TestApp> {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-home-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const config = loadConfig({
    env: { AGENTSVC_HOME: home, AGENTSVC_PORT: '0', DATABASE_URL: await freshDatabaseUrl(t), OPENAI_API_KEY: 'test', ...env },
  });
  let service = await startService(config, { logFile: process.env.AGENTSVC_TEST_LOG ?? false });
  t.teardown(() => service.close());
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
    return fetch(service.url + path, { ...init, headers, body });
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
      await service.close();
      service = await startService({ ...config, port: 0 }, { logFile: process.env.AGENTSVC_TEST_LOG ?? false });
      t.teardown(() => service.close());
      app.service = service;
      app.url = service.url;
    },
  };
  return app;
}
