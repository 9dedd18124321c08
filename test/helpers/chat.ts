import type { Socket } from 'socket.io-client';
import type { TestApp } from './app.js';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model.js';
import { build } from './app.js';
import { next, request } from './socket.js';

type T = { teardown(fn: () => unknown): void };

export const EVENTS = ['chat:start', 'turn:start', 'turn:patch', 'turn:end', 'chat:end', 'system:error', 'session:resync'];

export interface Recorded {
  name: string;
  payload: any;
}

/** The app wired to a fresh fake model server. */
export async function buildWithModel(t: T, env: Record<string, string> = {}): Promise<{ app: TestApp; model: FakeModel }> {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  const app = await build(t, { OPENAI_BASE_URL: model.baseUrl, AGENTSVC_MODEL: 'fake-model', ...env });
  return { app, model };
}

export async function createSession(app: TestApp, key = app.adminKey, body: Record<string, unknown> = {}): Promise<string> {
  const res = await app.api('/api/sessions', { method: 'POST', json: body, key });
  if (res.status !== 200) throw new Error(`create session: ${res.status} ${await res.text()}`);
  return (await res.json()).session_id;
}

/** Record every server event on the socket. */
export function record(socket: Socket): Recorded[] {
  const seen: Recorded[] = [];
  socket.onAny((name, payload) => seen.push({ name, payload }));
  return seen;
}

/** Resolve when `chat:end` for the session has been recorded. */
export function untilEnd(seen: Recorded[], sessionId: string, timeoutMs = 20_000, count = 1): Promise<Recorded[]> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      if (seen.filter((e) => e.name === 'chat:end' && e.payload.session_id === sessionId).length >= count) return resolve(seen);
      if (Date.now() - t0 > timeoutMs) return reject(new Error(`no chat:end in ${timeoutMs}ms; saw ${seen.map((e) => e.name).join(',')}`));
      setTimeout(tick, 10);
    };
    tick();
  });
}

export async function subscribe(socket: Socket, sessionId: string, since_seq?: number) {
  const ack = await request(socket, 'session:subscribe', since_seq === undefined ? { session_id: sessionId } : { session_id: sessionId, since_seq });
  if (!ack.ok) throw new Error(`subscribe: ${JSON.stringify(ack)}`);
  return ack;
}

/** Event names with patch types, e.g. `turn:patch:add_content`, for comparing sequences. */
export function shape(events: Recorded[]): string[] {
  return events.map((e) => (e.name === 'turn:patch' ? `turn:patch:${e.payload.patch_type}` : e.name));
}

/** A connected socket of `key` (default admin), recording every event, subscribed to `sessionId`. */
export async function watch(app: TestApp, sessionId: string, key = app.adminKey): Promise<{ sock: Socket; seen: Recorded[] }> {
  const sock = app.socket(key);
  if (!sock.connected) await next(sock, 'connect', 30_000);
  const seen = record(sock);
  await subscribe(sock, sessionId);
  return { sock, seen };
}

/** A fresh app with a fake model and one session watched by an admin socket. */
export async function chatFixture(t: T, env: Record<string, string> = {}) {
  const { app, model } = await buildWithModel(t, env);
  const sid = await createSession(app);
  return { app, model, sid, ...(await watch(app, sid)) };
}

/** A tool `Echo {say}` that answers `said <say>` and notes each `say` in `ran`. */
export function echoTool(ran: string[] = []) {
  return {
    name: 'Echo',
    description: 'echo',
    provider: 'builtin' as const,
    parameters: { type: 'object', properties: { say: { type: 'string' } } },
    execute: async (a: { say?: string }) => {
      ran.push(a.say ?? '');
      return `said ${a.say}`;
    },
  };
}
