// What usage records and budgets add to a model call (issue 29): the loop awaits the model.before
// gate (budget check) and emits model.call (usage: cost, running totals, the insert started) per
// model call. Measured side by side: the same gate + emit with no listeners (the baseline), and
// with the usage module and three applicable budgets (install, user, session). Also: the insert's
// own latency (off the streaming path: nobody waits for it) and the queries a warm check makes.
// Usage: npx tsx bench/usage.ts [calls=3000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/platform/config/index.js';
import { openDatabase } from '../src/platform/db/index.js';
import { Hooks, type HookEvents, type RunInfo } from '../src/core/engine/hooks.js';
import { createUsage } from '../src/features/usage/index.js';
import { UserService } from '../src/features/users/service.js';
import type { Logger } from '../src/platform/lib/logger.js';

const CALLS = Number(process.argv[2] ?? 3000);
const home = mkdtempSync(join(tmpdir(), 'agentsvc-bench-usage-'));
const config = loadConfig({
  env: {
    AGENTSVC_HOME: home,
    AGENTSVC_MODELS: JSON.stringify([{ id: 'm', price: { input: 1, output: 4, cached_input: 0.5 } }]),
    AGENTSVC_MODEL: 'm',
    AGENTSVC_BUDGETS: JSON.stringify([{ period: 'month', max_cost: 1e9 }]),
  },
});
const quiet = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger;
const db = await openDatabase(config, { migrate: true });
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? 0;
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;

try {
  const { user } = await new UserService(db.em).ensureUser('bench');
  const sessionId = 'sess_bench';
  const run: RunInfo = { runId: 'run_bench', userId: user.id, sessionId, model: 'm', origin: 'chat', unattended: false, signal: new AbortController().signal, notice: () => {} };
  const call = (): HookEvents['model.call'] => ({
    run,
    loopId: 'root',
    turnId: 'turn_x',
    model: 'm',
    outcome: 'ok',
    usage: { input_tokens: 1200, output_tokens: 300 },
    startedAt: new Date(),
    durationMs: 900,
    ttftMs: 200,
    cachedInputTokens: 1000,
    estimated: false,
    attempts: 1,
  });

  /** Per call: the time the loop spends in the gate and the emit; the insert's completion apart. */
  async function measure(hooks: Hooks) {
    const onPath: number[] = [];
    const insert: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      const stop = await hooks.ask('model.before', { run, loopId: 'root', model: 'm' });
      if (stop) throw new Error(`stopped: ${stop.message}`);
      const written = hooks.emit('model.call', call());
      const t1 = performance.now();
      await written;
      onPath.push(t1 - t0);
      insert.push(performance.now() - t1);
    }
    return { onPath: onPath.slice(CALLS / 10), insert: insert.slice(CALLS / 10) }; // first tenth: warm-up
  }

  const baseline = await measure(new Hooks(quiet));
  const hooks = new Hooks(quiet);
  const usage = await createUsage({ config, db, hooks, logger: quiet, isAdmin: async () => true, userExists: async () => true, ownSession: async () => null });
  await usage.budgets.set('user', user.id, user.id, [{ period: 'day', max_tokens: 1e12, max_cost: null }]);
  await usage.budgets.set('session', sessionId, user.id, [{ period: 'total', max_tokens: null, max_cost: 1e9 }]);
  // Count the queries of a warm check: the budget totals are read once, then kept.
  await hooks.ask('model.before', { run, loopId: 'root', model: 'm' });
  const sql = db.sql;
  let queries = 0;
  db.sql = ((...a: Parameters<typeof sql>) => {
    queries++;
    return sql(...a);
  }) as typeof sql;
  for (let i = 0; i < 100; i++) await hooks.ask('model.before', { run, loopId: 'root', model: 'm' });
  const warmQueries = queries;
  db.sql = sql;
  const withUsage = await measure(hooks);
  usage.close();

  const rows = [
    ['baseline (no listeners): gate + emit', baseline.onPath],
    ['usage + 3 budgets: gate + emit', withUsage.onPath],
    ['usage: the insert (off the streaming path)', withUsage.insert],
  ] as const;
  console.log(`${CALLS} model calls (first tenth left out as warm-up)`);
  console.log(`${'per model call'.padEnd(46)}${'p50'.padStart(12)}${'p99'.padStart(12)}${'max'.padStart(12)}`);
  for (const [name, xs] of rows) console.log(`${name.padEnd(46)}${us(pct(xs, 50)).padStart(12)}${us(pct(xs, 99)).padStart(12)}${us(Math.max(...xs)).padStart(12)}`);
  console.log(`added on the call's path: p50 ${us(pct(withUsage.onPath, 50) - pct(baseline.onPath, 50))}, p99 ${us(pct(withUsage.onPath, 99) - pct(baseline.onPath, 99))} (goal: under 1 ms p99)`);
  console.log(`queries made by 100 warm budget checks: ${warmQueries}`);
  const [{ n }] = await db.sql<{ n: string }>('select count(*) as n from model_usage');
  console.log(`usage rows written: ${n} (one per call with listeners)`);
} finally {
  await db.close();
  rmSync(home, { recursive: true, force: true });
}
