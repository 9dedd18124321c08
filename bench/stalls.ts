// Event-loop stalls from hostile tool input (issue #8, item 6): boots the service, then for Grep,
// Glob, the tokenizer (/history) and WebFetch sends its worst input while /api/health is polled
// every 50 ms, and prints the tool's duration and the max and p99 health latency meanwhile.
// Usage: npx tsx bench/stalls.ts [pageMB=5] [scenarioTimeoutS=60]
// STALLS_SERVICE_DIR=/path/to/other/checkout measures another build (e.g. the code before a fix).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io } from 'socket.io-client';
import { startFakeModel } from '../test/fixtures/fake-model.js';

const PAGE_MB = Number(process.argv[2] ?? 5);
const LIMIT_MS = Number(process.argv[3] ?? 60) * 1000;
const serviceDir = process.env.STALLS_SERVICE_DIR ?? join(import.meta.dirname, '..');
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? 0;

const model = await startFakeModel();
// Unclosed <title> tags: the old title regex rescanned the rest of the page from each one.
const page = Buffer.from('<html><title>' + '<title>'.repeat(Math.floor((PAGE_MB * 1024 * 1024) / 7)));
const web = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(page);
});
await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
const pageUrl = `http://127.0.0.1:${(web.address() as { port: number }).port}/hostile`;

const home = mkdtempSync(join(tmpdir(), 'agentsvc-stalls-'));
const env: NodeJS.ProcessEnv = {
  ...process.env,
  AGENTSVC_HOME: home,
  OPENAI_BASE_URL: model.baseUrl,
  AGENTSVC_MODEL: 'fake-model',
  AGENTSVC_LOG_LEVEL: 'warn',
  AGENTSVC_WEBFETCH_ALLOW_PRIVATE: 'true',
};
delete env.DATABASE_URL;
const child = spawn(process.execPath, [join(serviceDir, 'bin', 'run.js'), 'up', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
const url = await new Promise<string>((resolve) => {
  let out = '';
  child.stdout!.on('data', (c) => {
    out += c;
    const m = /listening on (\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
});
const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const sid = (await (await fetch(`${url}/api/sessions`, { method: 'POST', headers, body: '{}' })).json()).session_id as string;
const sock = io(url, { auth: { token: key }, transports: ['websocket'] });
await new Promise<void>((r) => sock.once('connect', () => r()));
await sock.emitWithAck('session:subscribe', { session_id: sid });

/** One chat turn whose model calls the given tools; resolves with each tool's duration, seen from the client. */
function turn(calls: { name: string; args: object }[], extra: object[] = []): Promise<number[]> {
  model.script({ toolCalls: calls }, ...(extra as never[]), { text: ['done'] });
  const started = new Map<string, number>();
  const took: number[] = [];
  return new Promise((resolve) => {
    const on = (name: string, p: any) => {
      if (name === 'turn:patch' && p.patch_type === 'add_tool_call') started.set(p.data.id, performance.now());
      if (name === 'turn:patch' && p.patch_type === 'tool_result') took.push(performance.now() - (started.get(p.data.tool_call_id) ?? performance.now()));
      if (name === 'chat:end') {
        sock.offAny(on);
        resolve(took);
      }
    };
    sock.onAny(on);
    void sock.emitWithAck('chat:send', { session_id: sid, message: 'go' });
  });
}

/** Runs `work` while /api/health is polled every 50 ms; a scenario past LIMIT_MS is reported as such. */
async function measure(name: string, work: () => Promise<number>) {
  const lat: number[] = [];
  let polling = true;
  const poll = setInterval(() => {
    if (!polling) return;
    const t0 = performance.now();
    fetch(`${url}/api/health`).then(
      () => lat.push(performance.now() - t0),
      () => {},
    );
  }, 50);
  const t0 = performance.now();
  const result = await Promise.race([work().then((ms) => ({ ms })), new Promise<null>((r) => setTimeout(() => r(null), LIMIT_MS))]);
  await new Promise((r) => setTimeout(r, 200));
  polling = false;
  clearInterval(poll);
  const tool = result ? `${result.ms.toFixed(0)} ms` : `> ${LIMIT_MS / 1000} s (did not finish)`;
  const waited = performance.now() - t0;
  // Polls still unanswered at a timeout count as at least as slow as the wait.
  const max = result ? Math.max(...lat) : Math.max(waited, ...lat);
  const p99 = result ? pct(lat, 99) : max;
  console.log(`${name.padEnd(36)} tool ${tool.padEnd(26)} health max ${max.toFixed(0).padStart(6)} ms  p99 ${p99.toFixed(0).padStart(6)} ms  (${lat.length} polls answered)`);
  return !!result;
}

const write = (file_path: string, content: string) => ({ name: 'Write', args: { file_path, content } });
await turn([write('grep/a.txt', ('a'.repeat(25) + '!\n').repeat(3)), write('d/' + 'd/'.repeat(19) + 'f.txt', 'x'), write('d/' + 'd/'.repeat(19) + 'g.txt', 'x')]);
console.log(`stalls bench: service ${serviceDir}, hostile page ${PAGE_MB} MB, limit ${LIMIT_MS / 1000} s per scenario`);

let alive = await measure('Grep ^(a+)+$ (3 lines of 25 a)', async () => (await turn([{ name: 'Grep', args: { pattern: '^(a+)+$', path: 'grep' } }]))[0]);
if (alive) alive = await measure('Glob (**/)x9 on depth-20 paths', async () => (await turn([{ name: 'Glob', args: { pattern: '**/'.repeat(9) + '*.nomatch' } }]))[0]);
if (alive) {
  model.script({ text: ['ok'] });
  await sock.emitWithAck('chat:send', { session_id: sid, message: 'a'.repeat(7000) });
  await new Promise((r) => setTimeout(r, 1000));
  alive = await measure('/history with a 7000-letter message', async () => {
    const t0 = performance.now();
    await fetch(`${url}/api/sessions/${sid}/history`, { headers });
    return performance.now() - t0;
  });
}
if (alive)
  alive = await measure(
    `WebFetch ${PAGE_MB} MB of unclosed <title>`,
    async () => (await turn([{ name: 'WebFetch', args: { url: pageUrl, prompt: 'title?' } }], [{ text: ['answer'] }]))[0],
  );

sock.disconnect();
try {
  process.kill(-child.pid!, alive ? 'SIGTERM' : 'SIGKILL');
} catch {}
if (alive) await new Promise((r) => child.once('exit', r));
else {
  // A killed service cannot stop its embedded PostgreSQL (its own process group): stop it here.
  try {
    process.kill(Number(readFileSync(join(home, 'db', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGTERM');
  } catch {}
  await new Promise((r) => setTimeout(r, 2000));
}
web.close();
await model.close();
rmSync(home, { recursive: true, force: true });
process.exit(0);
