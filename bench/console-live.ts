// The console as a person first meets it, and under a heavy live run (issue 32's goals), in headless
// Debian chromium through playwright-core against `agentsvc up` and the fake model (real SSE):
// - first load: navigation to the sign-in form ready for typing, and from "Sign in" to the sessions
//   list shown; the compressed JavaScript that load fetched (goal: interactive under 1 s, under
//   250 KB of compressed JavaScript);
// - 20 sub-agents streaming at once (one message with 20 Agent calls, each sub-agent streaming
//   `words` deltas): the tab's main-thread CPU (CDP TaskDuration over wall time) while they stream,
//   beside the same tab idle on the same screen for the same time, as the baseline (goal: under 60%
//   of one core).
// Usage: npx tsx bench/console-live.ts [agents=20] [words=150] [delayMs=20] [runs=3]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { startFakeModel } from '../test/fixtures/fake-model.js';
import { startUp } from './lib/up.js';

const [AGENTS, WORDS, DELAY, RUNS] = [20, 150, 20, 3].map((d, i) => Number(process.argv[2 + i] ?? d));
const chromiumPath = spawnSync('sh', ['-c', 'command -v chromium']).stdout.toString().trim();
if (!chromiumPath) {
  console.log('skipped: chromium is not installed (apt-get install chromium)');
  process.exit(0);
}

const model = await startFakeModel();
model.fallback = (body: any) => {
  const first = String(body.messages[0]?.content ?? '');
  if (first.startsWith('You are a sub-agent')) return { delayMs: DELAY, text: Array.from({ length: WORDS }, (_, i) => `word${i} `) };
  if (body.messages.at(-1)?.role === 'tool') return { text: ['All agents are done.'] };
  return { toolCalls: Array.from({ length: AGENTS }, (_, i) => ({ name: 'Agent', args: { description: `agent ${i}`, prompt: `Write ${WORDS} words` } })) };
};
const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-console-live-'));
const pg = await startEmbeddedPostgres(join(tmp, 'pg'), { database: 'postgres' });
const home = join(tmp, 'home');
const env = {
  ...process.env,
  AGENTSVC_HOME: home,
  DATABASE_URL: pg.url,
  OPENAI_BASE_URL: model.baseUrl,
  OPENAI_API_KEY: 'test',
  AGENTSVC_MODEL: 'fake-model',
  AGENTSVC_LOG_LEVEL: 'warn',
  AGENTSVC_RATE_LIMIT_PER_MINUTE: '0',
};
const service = await startUp(env);
const url = service.url;
const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu'] });

/** Main-thread busy time of the page (CDP TaskDuration, seconds) at this moment. */
async function busy(page: Page): Promise<() => Promise<number>> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  return async () => (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration')?.value ?? 0;
}

interface Figures {
  formMs: number;
  listMs: number;
  jsBytes: number;
  streamS: number;
  streamCpu: number;
  idleCpu: number;
  deltas: number;
}

async function run(): Promise<Figures> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  let jsBytes = 0;
  page.on('response', async (r) => {
    if (r.url().endsWith('.js')) jsBytes += Number((await r.allHeaders())['content-length'] ?? 0);
  });
  // First load: a cold context (no cache), the form ready, then signed in to the list.
  const t0 = performance.now();
  await page.goto(`${url}/`);
  await page.getByLabel('API key').waitFor();
  const formMs = performance.now() - t0;
  await page.getByLabel('API key').fill(key);
  const t1 = performance.now();
  await page.getByLabel('API key').press('Enter');
  await page.getByRole('button', { name: /new session/i }).first().waitFor();
  const listMs = performance.now() - t1;

  const r = await fetch(`${url}/api/sessions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"mode":"executing"}' });
  const sid = ((await r.json()) as { session_id: string }).session_id;
  await page.goto(`${url}/sessions/${sid}`);
  await page.getByLabel('Message', { exact: true }).waitFor();
  const cpu = await busy(page);

  // Baseline: the same screen, idle, for about as long as the run streams.
  const expectS = (WORDS * DELAY) / 1000 + 1;
  const i0 = await cpu();
  const it0 = performance.now();
  await page.waitForTimeout(expectS * 1000);
  const idleCpu = (await cpu()) - i0;
  const idleS = (performance.now() - it0) / 1000;

  const before = model.requests.length;
  const b0 = await cpu();
  const s0 = performance.now();
  await page.getByLabel('Message', { exact: true }).fill('start the agents');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  await page.getByText('All agents are done.').first().waitFor({ timeout: 120_000 });
  const streamS = (performance.now() - s0) / 1000;
  const streamCpu = (await cpu()) - b0;
  await context.close();
  return { formMs, listMs, jsBytes, streamS, streamCpu: streamCpu / streamS, idleCpu: idleCpu / idleS, deltas: (model.requests.length - before - 2) * WORDS };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  const runs: Figures[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await run());
  const m = (k: keyof Figures) => median(runs.map((x) => x[k]));
  console.log(`web console, median of ${RUNS} runs, headless chromium on loopback`);
  console.log(`first load: sign-in form ready ${m('formMs').toFixed(0)} ms; signed in to the sessions list ${m('listMs').toFixed(0)} ms; ${(m('jsBytes') / 1024).toFixed(0)} KB of compressed JavaScript fetched`);
  console.log(`${AGENTS} sub-agents streaming ${WORDS} deltas each (${m('deltas')} deltas in ${m('streamS').toFixed(1)} s): tab main thread ${(m('streamCpu') * 100).toFixed(0)}% of one core; idle on the same screen (baseline) ${(m('idleCpu') * 100).toFixed(1)}%`);
  const goals = [
    ['interactive under 1 s', m('formMs') + m('listMs') < 1000],
    ['under 250 KB of compressed JavaScript', m('jsBytes') < 250 * 1024],
    [`${AGENTS} sub-agents under 60% of one core`, m('streamCpu') < 0.6],
  ] as const;
  for (const [what, ok] of goals) console.log(`goal: ${ok ? 'ok' : 'MISS'} ${what}`);
} finally {
  await browser.close();
  await service.stop();
  await pg.stop();
  await model.close();
  rmSync(tmp, { recursive: true, force: true });
}
