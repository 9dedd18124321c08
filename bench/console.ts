// The console's chat view on a long session, virtualised (only the turns near the viewport in the
// DOM) against the baseline that draws every turn (sessionStorage 'agentsvc.render-all'), in the
// same run, same service, same browser: time from navigation to the newest turn shown, JS heap
// after a GC, DOM nodes, and scrolling up (a wheel's 100 px a frame, then a fling to the oldest turn
// a viewport a frame): long tasks over 50 ms, worst frame. Headless Debian chromium through playwright-core.
// Usage: npx tsx bench/console.ts [turns=5000] [runs=3]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { importLongSession } from '../test/helpers/long-session.js';
import { startUp } from './lib/up.js';

const TURNS = Number(process.argv[2] ?? 5000);
const RUNS = Number(process.argv[3] ?? 3);
const chromiumPath = spawnSync('sh', ['-c', 'command -v chromium']).stdout.toString().trim();
if (!chromiumPath) {
  console.log('skipped: chromium is not installed (apt-get install chromium)');
  process.exit(0);
}
const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-console-'));
const pg = await startEmbeddedPostgres(join(tmp, 'pg'), { database: 'postgres' });
const home = join(tmp, 'home');
const env = { ...process.env, AGENTSVC_HOME: home, DATABASE_URL: pg.url, OPENAI_API_KEY: 'none', AGENTSVC_LOG_LEVEL: 'warn' };
const service = await startUp(env);
const url = service.url;
const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
const sid = await importLongSession(url, key, TURNS, 'bench');

interface Figures {
  openMs: number;
  heapMiB: number;
  nodes: number;
  turnsInDom: number;
  /** Wheel: 100 px a frame for 300 frames. */
  wheelLong: number;
  wheelWorst: number;
  /** Fling: a viewport a frame to the oldest turn. */
  longTasks: number;
  worstFrameMs: number;
  scrollMs: number;
}

async function measure(browser: Browser, renderAll: boolean): Promise<Figures> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  await page.goto(`${url}/`);
  await page.evaluate(
    ([k, all]) => {
      sessionStorage.setItem('agentsvc.key', k);
      if (all) sessionStorage.setItem('agentsvc.render-all', '1');
    },
    [key, renderAll] as const,
  );
  const t0 = performance.now();
  await page.goto(`${url}/sessions/${sid}`);
  await page.getByText(`Answer ${TURNS - 1}.`).first().waitFor({ timeout: 300_000 });
  const openMs = performance.now() - t0;
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const metric = (n: string) => metrics.find((m) => m.name === n)?.value ?? 0;
  const turnsInDom = await page.locator('.turns > article.turn').count();
  // Scrolling up from the newest turn, watching long tasks and frame gaps: first as a mouse wheel
  // does (100 px a frame, 300 frames), then flung to the oldest turn one viewport a frame.
  const scrollUp = (step: number | null, frames: number) =>
    page.evaluate(
      async ([step, frames]) => {
        const el = document.querySelector('.turns') as HTMLElement;
        const long: number[] = [];
        const obs = new PerformanceObserver((l) => l.getEntries().forEach((e) => long.push(e.duration)));
        obs.observe({ type: 'longtask', buffered: false });
        let worst = 0;
        let last = performance.now();
        const start = last;
        for (let i = 0; i < frames && el.scrollTop > 0; i++) {
          el.scrollBy(0, -(step ?? el.clientHeight));
          await new Promise(requestAnimationFrame);
          const now = performance.now();
          worst = Math.max(worst, now - last);
          last = now;
        }
        await new Promise((r) => setTimeout(r, 100));
        obs.disconnect();
        return { longTasks: long.filter((d) => d > 50).length, worstFrameMs: worst, scrollMs: performance.now() - start };
      },
      [step, frames] as const,
    );
  const wheel = await scrollUp(100, 300);
  const fling = await scrollUp(null, 1e6);
  await context.close();
  return {
    openMs,
    heapMiB: metric('JSHeapUsedSize') / 1048576,
    nodes: metric('Nodes'),
    turnsInDom,
    wheelLong: wheel.longTasks,
    wheelWorst: wheel.worstFrameMs,
    longTasks: fling.longTasks,
    worstFrameMs: fling.worstFrameMs,
    scrollMs: fling.scrollMs,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
try {
  console.log(`chat view, ${TURNS} turns, median of ${RUNS} runs each (virtualised and baseline alternate)`);
  const runs: Record<string, Figures[]> = { virtualised: [], 'draw every turn': [] };
  for (let i = 0; i < RUNS; i++) {
    runs.virtualised.push(await measure(browser, false));
    runs['draw every turn'].push(await measure(browser, true));
  }
  console.log('view            | open (ms) | JS heap (MiB) | DOM nodes | turns in DOM | wheel: long tasks >50ms, worst frame ms | fling to top: long tasks, worst frame ms, total ms');
  for (const [name, r] of Object.entries(runs)) {
    const m = (k: keyof Figures) => median(r.map((x) => x[k]));
    console.log(
      `${name.padEnd(15)} | ${m('openMs').toFixed(0).padStart(9)} | ${m('heapMiB').toFixed(1).padStart(13)} | ${String(m('nodes')).padStart(9)} | ${String(m('turnsInDom')).padStart(12)} | ${String(m('wheelLong')).padStart(5)}, ${m('wheelWorst').toFixed(0).padStart(4)} | ${m('longTasks')}, ${m('worstFrameMs').toFixed(0)}, ${m('scrollMs').toFixed(0)}`,
    );
  }
} finally {
  await browser.close();
  await service.stop();
  await pg.stop();
  rmSync(tmp, { recursive: true, force: true });
}
