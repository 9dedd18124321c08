// Export and import of a session with 1,000 turns and S MB of workspace files, through the public
// REST interface of a real `agentsvc up` (its own process): time and the service's peak RSS for
// several archive sizes (memory must not grow with the archive), and the share page render time
// for those turns. Usage: npx tsx bench/portability.ts [sizes MB, comma separated=10,50,200] [turns=1000]
// (the share page is skipped above 100,000 turns: it is rendered whole, 60 MiB of HTML at 100k).
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Api } from '../src/client/api.js';
import { Progress } from '../src/client/progress.js';
import { downloadExport, uploadArchive } from '../src/client/transfer.js';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
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
console.log('archive   | import: time   peak RSS (+idle)  slowest health | export: time   peak RSS (+idle) | round trip');

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
let lastSid = '';
for (const mb of SIZES) {
  const src = join(tmp, `in-${mb}.zip`);
  await makeArchive(mb, TURNS, src);
  const imp = await measure(() => healthDuring(() => uploadArchive(api, src, { name: `bench ${mb}` }, false, quiet)));
  const sid = String(imp.value.value.session_id);
  lastSid = sid;
  const out = join(tmp, `out-${mb}.zip`);
  const exp = await measure(() => downloadExport(api, sid, out, quiet));
  console.log(
    `${String(mb).padStart(4)} MiB  | ${(imp.ms / 1000).toFixed(2).padStart(6)} s  ${imp.peak.toFixed(0).padStart(4)} MiB (+${(imp.peak - imp.before).toFixed(0)})  ${imp.value.slowest.toFixed(0).padStart(5)} ms ` +
      `| ${(exp.ms / 1000).toFixed(2).padStart(6)} s  ${exp.peak.toFixed(0).padStart(4)} MiB (+${(exp.peak - exp.before).toFixed(0)}) ` +
      `| ${mib(statSync(src).size)} -> ${mib(exp.value.bytes)} MiB, ${exp.value.entries} entries`,
  );
  rmSync(src);
  rmSync(out);
}

// The share page of the last imported session (every 4th turn with a tool call).
if (TURNS > 100_000) {
  console.log(`share page: skipped for ${TURNS} turns`);
  await stop();
  await pg.stop();
  rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}
const share = await api.json<{ url: string }>('POST', `/api/sessions/${lastSid}/share`, {});
const page = new URL(share.url).pathname;
const times: number[] = [];
let size = 0;
for (let i = 0; i < 7; i++) {
  const t0 = performance.now();
  const res = await fetch(url + page);
  size = (await res.text()).length;
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
console.log(`share page, ${TURNS} turns: p50 ${times[3].toFixed(0)} ms, max ${times[6].toFixed(0)} ms, ${mib(size)} MiB of HTML (7 renders)`);
const json: number[] = [];
for (let i = 0; i < 7; i++) {
  const t0 = performance.now();
  await (await fetch(`${url}/api/share/${page.split('/').pop()}`)).json();
  json.push(performance.now() - t0);
}
json.sort((a, b) => a - b);
console.log(`GET /api/share/{token}, ${TURNS} turns: p50 ${json[3].toFixed(0)} ms`);

await stop();
await pg.stop();
rmSync(tmp, { recursive: true, force: true });
