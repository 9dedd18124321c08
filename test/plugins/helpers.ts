import type { TestApp } from '../helpers/app.js';
import type { FakeModel } from '../fixtures/fake-model.js';
import { untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/** GET /api/env/check (as the admin, or as the owner of `key`), parsed: every `check` event by id. */
export async function envChecks(app: TestApp, key?: string): Promise<Record<string, { status: string; detail: string; fix: string | null }>> {
  const text = await (await app.api('/api/env/check', key ? { key } : undefined)).text();
  const out: Record<string, { status: string; detail: string; fix: string | null }> = {};
  for (const block of text.split('\n\n')) {
    const ev = /^event: (\w+)\ndata: (.*)$/m.exec(block);
    if (ev?.[1] === 'check') {
      const d = JSON.parse(ev[2]);
      out[d.check_id] = d;
    }
  }
  return out;
}

/** One chat:send through a real socket, the model scripted; resolves with the tool results in order. */
export function chat(app: TestApp, model: FakeModel, sid: string, message: string, ...steps: Parameters<FakeModel['script']>) {
  return chatAs(app, app.adminKey, model, sid, message, ...steps);
}

/** `chat` as the owner of `key`. */
export async function chatAs(app: TestApp, key: string, model: FakeModel, sid: string, message: string, ...steps: Parameters<FakeModel['script']>) {
  const { sock, seen } = await watch(app, sid, key);
  model.script(...steps);
  const ack = await request(sock, 'chat:send', { session_id: sid, message });
  if (!ack.ok) throw new Error(`chat:send: ${JSON.stringify(ack)}`);
  await untilEnd(seen, sid, 60_000);
  sock.disconnect();
  const results = seen.filter((e) => e.payload?.patch_type === 'tool_result').map((e) => ({ result: String(e.payload.data.result), status: e.payload.data.status }));
  const end = seen.find((e) => e.name === 'chat:end')!.payload;
  return { results, end, seen };
}

/** The tool names offered in the i-th model request. */
export const offered = (model: FakeModel, i: number): string[] => (model.requests[i].tools ?? []).map((x: any) => x.function.name);
