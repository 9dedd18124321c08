// Time to first text through each door, in one run of one service: from the request that sends a
// message to the first text the client holds. Socket.IO: chat:send to the first add_content; MCP:
// tools/call send_message (official SDK client over Streamable HTTP) to the first progress
// notification carrying text; AG-UI: POST /api/ag-ui/{id} to the first TEXT_MESSAGE_CONTENT. The
// floor is the fake model writing its first chunk. The doors take turns, a fresh session each.
// Usage: npx tsx bench/doors.ts [rounds=20]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { io } from 'socket.io-client';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { startFakeModel } from '../test/fixtures/fake-model.js';
import { startUp } from './lib/up.js';

const ROUNDS = Number(process.argv[2] ?? 20);
const now = () => performance.timeOrigin + performance.now();
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const model = await startFakeModel();
let firstChunk = 0;
model.onChunk = (_text, at) => (firstChunk ||= at);
model.fallback = { text: ['Hello ', 'from ', 'the ', 'model.'] };
const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-doors-'));
const pg = await startEmbeddedPostgres(join(tmp, 'pg'), { database: 'postgres' });
const home = join(tmp, 'home');
const env = { ...process.env, AGENTSVC_HOME: home, DATABASE_URL: pg.url, OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'x', AGENTSVC_MODEL: 'fake-model', AGENTSVC_LOG_LEVEL: 'warn' };
const service = await startUp(env);
const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const session = async () => (await (await fetch(`${service.url}/api/sessions`, { method: 'POST', headers: auth, body: '{}' })).json()).session_id as string;

const sock = io(service.url, { auth: { token: key }, transports: ['websocket'] });
await new Promise<void>((r) => sock.once('connect', () => r()));
const mcp = new Client({ name: 'bench', version: '1' });
await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));

/** Each door: send one message to a fresh session; resolves [first text at, run ended]. */
const doors: Record<string, (sid: string) => Promise<number>> = {
  async socket(sid) {
    await new Promise((r) => sock.emit('session:subscribe', { session_id: sid }, r));
    let first = 0;
    const ended = new Promise<void>((resolve) => {
      const on = (name: string, p: { session_id: string; patch_type?: string }) => {
        if (p.session_id !== sid) return;
        if (name === 'turn:patch' && p.patch_type === 'add_content') first ||= now();
        if (name === 'chat:end') {
          sock.offAny(on);
          resolve();
        }
      };
      sock.onAny(on);
    });
    sock.emit('chat:send', { session_id: sid, message: 'hi' });
    await ended;
    return first;
  },
  async mcp(sid) {
    let first = 0;
    await mcp.callTool({ name: 'send_message', arguments: { session_id: sid, message: 'hi' } }, undefined, {
      onprogress: (p) => void (p.message && !p.message.startsWith('[') && (first ||= now())),
    });
    return first;
  },
  async agui(sid) {
    const res = await fetch(`${service.url}/api/ag-ui/${sid}`, { method: 'POST', headers: auth, body: JSON.stringify({ threadId: sid, runId: 'r', messages: [{ id: 'm', role: 'user', content: 'hi' }] }) });
    let first = 0;
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) if (decoder.decode(chunk).includes('"TEXT_MESSAGE_CONTENT"')) first ||= now();
    return first;
  },
};

const ttft: Record<string, number[]> = { socket: [], mcp: [], agui: [] };
const floor: Record<string, number[]> = { socket: [], mcp: [], agui: [] };
const names = Object.keys(doors);
for (let round = 0; round < ROUNDS + 2; round++) {
  for (let i = 0; i < names.length; i++) {
    const name = names[(round + i) % names.length];
    const sid = await session();
    firstChunk = 0;
    const t0 = now();
    const first = await doors[name](sid);
    // The first two rounds warm the paths up and are not counted.
    if (round < 2) continue;
    ttft[name].push(first - t0);
    floor[name].push(firstChunk - t0);
  }
}
// The model's first chunk is written at the same point of every door's run: what comes after it is
// the door's own delivery; what comes before, the start of the run (the door's request included).
const ms = (xs: number[], p: number) => pct(xs, p).toFixed(1);
const row = (label: string, name: string) => {
  const after = ttft[name].map((x, i) => x - floor[name][i]);
  return `| ${label} | ${ms(ttft[name], 50)} | ${ms(ttft[name], 90)} | ${ms(floor[name], 50)} | ${ms(after, 50)} | ${ttft[name].length} |`;
};
console.log('| door | first text p50 (ms) | p90 (ms) | model\'s first chunk p50 (ms) | first chunk to first text p50 (ms) | runs |\n|---|---|---|---|---|---|');
console.log(row('Socket.IO (chat:send, add_content)', 'socket'));
console.log(row('MCP (send_message, progress)', 'mcp'));
console.log(row('AG-UI (POST, TEXT_MESSAGE_CONTENT)', 'agui'));

sock.disconnect();
await mcp.close();
await service.stop();
await pg.stop();
await model.close();
rmSync(tmp, { recursive: true, force: true });
