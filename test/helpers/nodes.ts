import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io as connect, type Socket } from 'socket.io-client';
import { startFakeModel, type FakeModel, type Step } from '../fixtures/fake-model.js';
import { deadline, type Api } from './chaos.js';
import { kill, startUp, type UpProcess } from './cli.js';

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
