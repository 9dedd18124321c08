#!/usr/bin/env node
// `npm test`: starts the real services the suite needs once per run (embedded PostgreSQL, Redis when
// installed), runs tap over the test files in parallel, stops everything it started.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';

const CI = process.env.CI === 'true';
const home = mkdtempSync(join(tmpdir(), 'agentsvc-test-'));
const stops = [];
let code = 1;
/** The signal that asked us to stop (Ctrl-C, a closed terminal, kill), and tap once it runs. */
let stopSignal = null;
let tap = null;
// The embedded PostgreSQL runs in its own process group, so a terminal's Ctrl-C never reaches
// it, and Node's default on a signal is to exit at once, skipping the cleanup below: the
// database and the temp folder outlived every interrupted run. Instead, a signal is passed on
// to tap's process group (tap and the test files; tap alone does not pass SIGTERM on), any of
// them still there after 10 s are killed, and the run then stops what it started.
function stopTests(sig) {
  try {
    process.kill(-tap.pid, sig);
  } catch {} // already gone
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    if (stopSignal) return;
    stopSignal = sig;
    console.error(`# ${sig}: stopping the tests, then PostgreSQL and Redis`);
    if (!tap) return;
    stopTests(sig);
    setTimeout(() => stopTests('SIGKILL'), 10_000).unref();
  });
}
const SIGNAL_CODES = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  if (process.env.TEST_REDIS_URL) return;
  if (spawnSync('sh', ['-c', 'command -v redis-server']).status !== 0) {
    const msg = 'redis-server not installed: Redis-backed tests will skip';
    if (CI) throw new Error(msg + ' (CI=true requires it)');
    console.log(`# ${msg}`);
    return;
  }
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  // A terminal's Ctrl-C reaches redis-server too (same process group): it may be gone already.
  const exited = new Promise((r) => child.once('exit', r));
  stops.push(() => {
    child.kill('SIGTERM');
    return exited;
  });
  const { waitFor } = await tsImport('./helpers/wait.ts', import.meta.url);
  await waitFor(() => spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG'), { timeoutMs: 10_000, everyMs: 100, what: 'redis-server to answer PING' });

  process.env.TEST_REDIS_URL = `redis://127.0.0.1:${port}`;
}

/**
 * tap prints a failure where it happens, thousands of lines before the end of a CI log, whose
 * tail is often all that is kept. After a failed run this repeats every failing assertion, and
 * every file that timed out or ended without a plan, from tap's per-file results in
 * .tap/test-results, as the last lines of the output.
 */
function printFailures(files) {
  const root = join('.tap', 'test-results');
  if (!existsSync(root)) return;
  const results = readdirSync(root, { recursive: true }).filter((f) => String(f).endsWith('.tap'));
  const wanted = files.length ? new Set(files.map((f) => f.replace(/^\.\//, '') + '.tap')) : null;
  const lines = [];
  for (const f of results) {
    if (wanted && !wanted.has(String(f))) continue;
    const text = readFileSync(join(root, String(f)), 'utf8');
    const all = text.split('\n');
    const failed = all.filter((l) => /^\s*not ok\b/.test(l) || /timeout!|# (timeout|signal)/.test(l));
    // What a failed browser test's pages showed (test/console/browser.ts reportPages), 40 lines a file.
    const shown = [];
    for (let i = 0, inBlock = false; i < all.length && shown.length < 40; i++) {
      if (/^\s*# page \d+ at /.test(all[i])) inBlock = true;
      else if (!/^\s*#/.test(all[i])) inBlock = false;
      if (inBlock) shown.push(`| ${all[i].trim().replace(/^# ?/, '')}`);
    }
    failed.push(...shown);
    const planned = /^1\.\.\d+/m.test(text);
    if (failed.length || !planned) lines.push(`# ${String(f).replace(/\.tap$/, '')}${planned ? '' : ' (ended without a plan)'}`, ...failed.map((l) => `#   ${l.trim()}`));
  }
  if (lines.length) console.log(['# ---- failures (from .tap/test-results) ----', ...lines].join('\n'));
}

try {
  const { startEmbeddedPostgres } = await tsImport('../src/platform/db/embedded.ts', import.meta.url);
  const pg = await startEmbeddedPostgres(home, { database: 'postgres' });
  stops.push(() => pg.stop());
  process.env.TEST_PG_URL = pg.url;
  await startRedis();
  const files = process.argv.slice(2);
  if (stopSignal) throw new Error(`${stopSignal} before the tests started`);
  // A process group of its own (detached), so that a signal reaches every test process. Its
  // stdin is closed: a background group reading the terminal would be stopped (SIGTTIN).
  tap = spawn(process.execPath, [join('node_modules', 'tap', 'dist', 'esm', 'run.mjs'), ...(files.length ? files : [])], {
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: process.env,
  });
  code = await new Promise((resolve) => tap.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));
  if (code !== 0) printFailures(files);
} catch (e) {
  console.error(`test setup failed: ${e.message}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  rmSync(home, { recursive: true, force: true });
}
process.exit(stopSignal ? SIGNAL_CODES[stopSignal] : code);
