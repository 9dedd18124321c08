// Export and import of a session with 1,000 turns and S MB of workspace files, through the public
// REST interface of a real `agentsvc up` (its own process): time and the service's peak RSS for
// several archive sizes (memory must not grow with the archive), and the share page render time
// for those turns. Usage: npx tsx bench/portability.ts [sizes MB, comma separated=10,50,200] [turns=1000]
// (the share routes and the owner's messages stream a page of turns at a time).
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Api } from '../src/cli/terminal/api.js';
import { Progress } from '../src/cli/terminal/progress.js';
import { downloadExport, uploadArchive } from '../src/cli/terminal/transfer.js';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { makeArchive } from './lib/archive.js';
import { startUp } from './lib/up.js';

const SIZES = (process.argv[2] ?? '10,50,200').split(',').map(Number);
const TURNS = Number(process.argv[3] ?? 1000);
const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-port-'));
const pg = await startEmbeddedPostgres(join(tmp, 'pg'), { database: 'postgres' });
const home = join(tmp, 'home');
const env: NodeJS.ProcessEnv = { ...process.env, AGENTSVC_HOME: home, DATABASE_URL: pg.url, OPENAI_API_KEY: 'none', AGENTSVC_LOG_LEVEL: 'warn', AGENTSVC_IMPORT_MAX_BYTES: String(2 * 1024 ** 3), AGENTSVC_UPLOAD_LIMIT: String(2 * 1024 ** 3), AGENTSVC_UPLOAD_MAX_TOTAL: String(2 * 1024 ** 3) };
const { child, url, stop } = await startUp(env);
// A failing step must not leave `up` and the database running.
process.on('uncaughtException', async (e) => {
  console.error(e);
  await stop().catch(() => {});
  await pg.stop().catch(() => {});
  process.exit(1);
});
// An import of 500k turns answers after more than fetch's 300 s header timeout when the machine is
// loaded: uploadArchive (the CLI's) uses node:http, which has none.
const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
const api = new Api({ url, urlFrom: 'bench', key, keyFrom: 'bench', home });
const quiet = new Progress({ write: () => true, isTTY: false }, '');
const rssMiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;

/** The service's peak RSS while `fn` runs (sampled every 10 ms), and its duration. */
async function measure<T>(fn: () => Promise<T>): Promise<{ ms: number; peak: number; before: number; value: T }> {
  const before = rssMiB();
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB())), 10);
  const t0 = performance.now();
  const value = await fn();
  const ms = performance.now() - t0;
  clearInterval(timer);
  return { ms, peak: Math.max(peak, rssMiB()), before, value };
}

const mib = (b: number) => (b / 1048576).toFixed(1);
console.log(`service idle RSS ${rssMiB().toFixed(0)} MiB; ${TURNS} turns per session`);
console.log('archive   | import: time   peak RSS (+idle)  slowest health (event-loop delay) | export: time   peak RSS (+idle) | round trip');

/** The slowest /api/health answer while `fn` runs. */
async function healthDuring<T>(fn: () => Promise<T>): Promise<{ value: T; slowest: number }> {
  let running = true;
  let slowest = 0;
  const poll = (async () => {
    while (running) {
      const t0 = performance.now();
      await (await fetch(`${url}/api/health`)).arrayBuffer();
      slowest = Math.max(slowest, performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    return { value: await fn(), slowest };
  } finally {
    running = false;
    await poll;
  }
}
/**
 * The service's own event-loop delay since the last call (max and p99, ms), from /metrics (its
 * histogram is reset at each scrape): the loop's stalls, without the bench's side of /api/health.
 */
async function loopDelay(): Promise<{ max: number; p99: number }> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${key}` } })).text();
  const get = (name: string) => Number(new RegExp(`^agentsvc_nodejs_eventloop_lag_${name}_seconds\\S* (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN) * 1000;
  return { max: get('max'), p99: get('p99') };
}
let lastSid = '';
for (const mb of SIZES) {
  const src = join(tmp, `in-${mb}.zip`);
  await makeArchive(mb, TURNS, src);
  await loopDelay();
  const imp = await measure(() => healthDuring(() => uploadArchive(api, src, { name: `bench ${mb}` }, false, quiet)));
  const loop = await loopDelay();
  const sid = String(imp.value.value.session_id);
  lastSid = sid;
  const out = join(tmp, `out-${mb}.zip`);
  const exp = await measure(() => downloadExport(api, sid, out, quiet));
  console.log(
    `${String(mb).padStart(4)} MiB  | ${(imp.ms / 1000).toFixed(2).padStart(6)} s  ${imp.peak.toFixed(0).padStart(4)} MiB (+${(imp.peak - imp.before).toFixed(0)})  ${imp.value.slowest.toFixed(0).padStart(5)} ms (loop max ${loop.max.toFixed(0)}, p99 ${loop.p99.toFixed(0)} ms) ` +
      `| ${(exp.ms / 1000).toFixed(2).padStart(6)} s  ${exp.peak.toFixed(0).padStart(4)} MiB (+${(exp.peak - exp.before).toFixed(0)}) ` +
      `| ${mib(statSync(src).size)} -> ${mib(exp.value.bytes)} MiB, ${exp.value.entries} entries`,
  );
  rmSync(src);
  rmSync(out);
}

// The share page and JSON of the last imported session (every 4th turn with a tool call).
const share = await api.json<{ url: string }>('POST', `/api/sessions/${lastSid}/share`, {});
const page = new URL(share.url).pathname;
/** p50 and max of 7 fetches of `path` (their bodies read whole), the service's peak RSS and event-loop delay meanwhile, the body's length. */
async function seven(path: string, headers: Record<string, string> = {}) {
  const times: number[] = [];
  let size = 0;
  await loopDelay();
  const m = await measure(async () => {
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      size = (await (await fetch(url + path, { headers })).arrayBuffer()).byteLength;
      times.push(performance.now() - t0);
    }
  });
  const loop = await loopDelay();
  times.sort((a, b) => a - b);
  return `p50 ${times[3].toFixed(0)} ms, max ${times[6].toFixed(0)} ms, ${mib(size)} MiB, peak RSS ${m.peak.toFixed(0)} MiB (+${(m.peak - m.before).toFixed(0)}), loop max ${loop.max.toFixed(0)} ms (7 fetches)`;
}
console.log(`share page, ${TURNS} turns: ${await seven(page)}`);
console.log(`GET /api/share/{token}, ${TURNS} turns: ${await seven(`/api/share/${page.split('/').pop()}`)}`);
// The owner's read of the same turns (it streams too since 0354a7e; read whole it was +2.3 GiB).
console.log(`GET .../messages (owner), ${TURNS} turns: ${await seven(`/api/sessions/${lastSid}/messages`, { authorization: `Bearer ${key}` })}`);

await stop();
await pg.stop();
rmSync(tmp, { recursive: true, force: true });
