import type { Config } from '../../platform/config/index.js';
import type { ModelPrice } from '../../platform/config/models.js';
import type { Database } from '../../platform/db/index.js';
import type { Hooks } from '../../core/engine/hooks.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { Budgets } from './budgets.js';
import { usageRoutes, type UsageRouteDeps } from './routes.js';
import { roundCost, UsageStore } from './store.js';

/** What a run spent so far: `chat:end.usage` (docs/models-and-usage.md). */
export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  cost: number | null;
}

/** Cost in the price's currency: cached prompt tokens at their own price. */
export function costOf(price: ModelPrice | null, input: number, cached: number, output: number): number | null {
  if (!price) return null;
  const fresh = Math.max(0, input - cached);
  return (fresh * price.input + Math.min(cached, input) * price.cached_input + output * price.output) / 1e6;
}

export interface UsageModule {
  budgets: Budgets;
  store: UsageStore;
  /** The run's usage for its chat:end. */
  runUsage(runId: string): RunUsage;
  routes: { plugin: typeof usageRoutes; opts: UsageRouteDeps };
  close(): void;
}

/**
 * Usage and budgets as listeners of the run engine's hooks (nothing of it in the loop):
 * - `model.call`: cost from the price table, the run's totals, budget totals raised (synchronously,
 *   so the next check sees them), a warning past 80%, then one insert off the streaming path;
 * - `model.before`: a spent budget stops the run (`finish_reason: budget`);
 * - `run.before`: a chat:send while one is spent is refused with when it resets.
 */
export async function createUsage(deps: {
  config: Config;
  db: Database;
  hooks: Hooks;
  logger: Logger;
  isAdmin: UsageRouteDeps['isAdmin'];
  userExists: UsageRouteDeps['userExists'];
  ownSession: UsageRouteDeps['ownSession'];
}): Promise<UsageModule> {
  const { config, hooks, logger } = deps;
  const store = new UsageStore(deps.db);
  const budgets = new Budgets(store, config.budgets, config.timeZone, logger);
  await budgets.start();
  const prices = new Map(config.model.entries.map((e) => [e.id, e.price]));
  const runs = new Map<string, RunUsage>();

  hooks.on('model.call', (c) => {
    const { input_tokens, output_tokens } = c.usage;
    const cost = costOf(prices.get(c.model) ?? null, input_tokens, c.cachedInputTokens, output_tokens);
    const run = runs.get(c.run.runId) ?? { input_tokens: 0, output_tokens: 0, cost: null };
    run.input_tokens += input_tokens;
    run.output_tokens += output_tokens;
    if (cost !== null) run.cost = (run.cost ?? 0) + cost;
    runs.set(c.run.runId, run);
    for (const w of budgets.record(c.run.userId, c.run.sessionId, input_tokens + output_tokens, cost ?? 0)) {
      c.run.notice('BUDGET_WARNING', w.message, w.data);
      void hooks.emit('budget.warning', { run: c.run, message: w.message, budget: w.data });
    }
    void hooks.emit('model.usage', { run: c.run, model: c.model, input_tokens, output_tokens, cached_input_tokens: c.cachedInputTokens, cost, estimated: c.estimated });
    return store
      .insert({
        user_id: c.run.userId,
        session_id: c.run.sessionId,
        turn_id: c.turnId,
        run_id: c.run.runId,
        model: c.model,
        outcome: c.outcome,
        purpose: c.purpose ?? 'turn',
        input_tokens,
        output_tokens,
        cached_input_tokens: c.cachedInputTokens,
        cost,
        estimated: c.estimated,
        attempts: c.attempts,
        fallback_from: c.fallbackFrom ?? null,
        started_at: c.startedAt,
        duration_ms: Math.round(c.durationMs),
        ttft_ms: c.ttftMs === null ? null : Math.round(c.ttftMs),
        credential: c.credential ?? 'install',
      })
      .catch((e) => logger.error({ ...errField(e), session_id: c.run.sessionId }, 'could not record a model call'));
  });
  hooks.on('run.ended', ({ run }) => void runs.delete(run.runId));
  hooks.on('session.deleted', ({ sessionId }) => budgets.forgetSession(sessionId));

  hooks.gate('model.before', async ({ run }) => {
    const spent = await budgets.spent(run.userId, run.sessionId);
    return spent && { action: 'stop', code: 'BUDGET_EXCEEDED', message: spent.message, finish_reason: 'budget' };
  });
  hooks.gate('run.before', async ({ userId, sessionId }) => {
    const spent = await budgets.spent(userId, sessionId);
    return spent && { action: 'refuse', code: 'BUDGET_EXCEEDED', message: spent.message };
  });

  return {
    budgets,
    store,
    runUsage: (runId) => {
      const r = runs.get(runId) ?? { input_tokens: 0, output_tokens: 0, cost: null };
      return { ...r, cost: r.cost === null ? null : roundCost(r.cost) };
    },
    routes: {
      plugin: usageRoutes,
      opts: { store, budgets, timeZone: config.timeZone, isAdmin: deps.isAdmin, userExists: deps.userExists, ownSession: deps.ownSession },
    },
    close: () => budgets.close(),
  };
}
