import type { BudgetSpec } from '../../platform/config/models.js';
import type { Logger } from '../../platform/lib/logger.js';
import { errField } from '../../platform/lib/logger.js';
import { periodBounds } from './periods.js';
import type { BudgetSubject, UsageStore } from './store.js';

/** A budget with its use, as `GET /api/budgets` shows it. */
export interface BudgetUse extends BudgetSpec {
  scope: 'install' | 'user' | 'session';
  session_id?: string;
  used_tokens: number;
  used_cost: number;
  resets_at: string | null;
}

/** The running total of one budget's subject in its current period. */
interface Total {
  start: number;
  resets: number | null;
  tokens: number;
  cost: number;
  loadedAt: number;
  /** BUDGET_WARNING sent for this period (docs/models-and-usage.md: once per period). */
  warned: boolean;
}

interface Applicable {
  subject: BudgetSubject;
  spec: BudgetSpec;
}

/** A running total older than this is read again in the background (other nodes spend too). */
const REFRESH_MS = 30_000;
const WARN_AT = 0.8;

const subjectKey = (s: BudgetSubject) => (s.scope === 'install' ? 'install' : `${s.scope}:${s.id}`);
const over = (spec: BudgetSpec, t: { tokens: number; cost: number }, share = 1) =>
  (spec.max_tokens !== null && t.tokens >= spec.max_tokens * share) || (spec.max_cost !== null && t.cost >= spec.max_cost * share);

/**
 * Budgets (docs/models-and-usage.md): the install's from config, users' and sessions' from the budgets table
 * (read whole at start, kept in memory, refreshed every 30 s for other nodes' changes). Each
 * budget's use in its period is a running total: read once from the usage records, then raised by
 * every recorded call, so checking before a model call costs no query on an ordinary run.
 */
export class Budgets {
  private users = new Map<string, BudgetSpec[]>();
  /** A session's budgets and its owner (they apply to the owner's runs only). */
  private sessions = new Map<string, { owner: string; budgets: BudgetSpec[] }>();
  private totals = new Map<string, Total>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: UsageStore,
    private readonly install: BudgetSpec[],
    private readonly timeZone: string,
    private readonly logger: Logger,
  ) {}

  async start() {
    await this.reload();
    this.timer = setInterval(() => void this.reload().catch((e) => this.logger.warn(errField(e), 'could not read budgets')), REFRESH_MS);
    this.timer.unref();
  }

  close() {
    if (this.timer) clearInterval(this.timer);
  }

  private async reload() {
    const users = new Map<string, BudgetSpec[]>();
    const sessions = new Map<string, { owner: string; budgets: BudgetSpec[] }>();
    for (const r of await this.store.allBudgets()) {
      if (r.scope === 'user') users.set(r.subject_id, r.budgets);
      else sessions.set(r.subject_id, { owner: r.user_id, budgets: r.budgets });
    }
    this.users = users;
    this.sessions = sessions;
  }

  private applicable(userId: string, sessionId?: string): Applicable[] {
    const out: Applicable[] = this.install.map((spec) => ({ subject: { scope: 'install' }, spec }));
    for (const spec of this.users.get(userId) ?? []) out.push({ subject: { scope: 'user', id: userId }, spec });
    const session = sessionId ? this.sessions.get(sessionId) : undefined;
    // Another user's session id tells nothing: its budgets are not the caller's.
    if (session?.owner === userId) for (const spec of session.budgets) out.push({ subject: { scope: 'session', id: sessionId! }, spec });
    return out;
  }

  /** The current period's total; read from the store when there is none yet or its period ended. */
  private async total(a: Applicable, now = Date.now()): Promise<Total> {
    const key = `${subjectKey(a.subject)}:${a.spec.period}`;
    const held = this.totals.get(key);
    if (held && (held.resets === null || now < held.resets)) {
      if (now - held.loadedAt > REFRESH_MS) {
        held.loadedAt = now;
        void this.store.spent(a.subject, new Date(held.start)).then(
          (s) => Object.assign(held, { tokens: Math.max(held.tokens, s.tokens), cost: Math.max(held.cost, s.cost) }),
          (e) => this.logger.warn(errField(e), 'could not refresh a budget total'),
        );
      }
      return held;
    }
    const { start, resets } = periodBounds(a.spec.period, this.timeZone, now);
    const spent = await this.store.spent(a.subject, new Date(start));
    const t: Total = { start, resets, ...spent, loadedAt: now, warned: over(a.spec, spent, WARN_AT) };
    this.totals.set(key, t);
    return t;
  }

  /** The first spent budget of a user's session, with what to tell the user; undefined when none is. */
  async spent(userId: string, sessionId?: string): Promise<{ message: string } | undefined> {
    for (const a of this.applicable(userId, sessionId)) {
      const t = await this.total(a);
      if (over(a.spec, t)) return { message: `${describe(a, t)} is spent; ${resetText(t.resets)}` };
    }
    return undefined;
  }

  /**
   * A recorded call raises every total it counts in (synchronously: the next check sees it). Answers
   * the warnings to send: budgets that passed 80% with this call, once per period.
   */
  record(userId: string, sessionId: string, tokens: number, cost: number, at = Date.now()): { message: string; data: Record<string, unknown> }[] {
    const warnings: { message: string; data: Record<string, unknown> }[] = [];
    for (const a of this.applicable(userId, sessionId)) {
      const t = this.totals.get(`${subjectKey(a.subject)}:${a.spec.period}`);
      if (!t || at < t.start || (t.resets !== null && at >= t.resets)) continue;
      t.tokens += tokens;
      t.cost += cost;
      if (!t.warned && over(a.spec, t, WARN_AT)) {
        t.warned = true;
        warnings.push({ message: `${describe(a, t)} is past ${WARN_AT * 100}%; ${resetText(t.resets)}`, data: { ...use(a, t) } });
      }
    }
    return warnings;
  }

  /** The caller's budgets with their use: the install's, their own, and one session's. */
  async list(userId: string, sessionId?: string): Promise<BudgetUse[]> {
    return Promise.all(this.applicable(userId, sessionId).map(async (a) => use(a, await this.total(a))));
  }

  /** Set a user's budgets (userId = id) or a session's (userId = its owner); an empty list removes them. */
  async set(scope: 'user' | 'session', id: string, userId: string, budgets: BudgetSpec[]) {
    await this.store.setBudgets(scope, id, userId, budgets);
    if (scope === 'user') this.users.set(id, budgets);
    else this.sessions.set(id, { owner: userId, budgets });
  }

  /** A deleted session's budgets go with it (its spending stays in model_usage). */
  async forgetSession(id: string) {
    const s = this.sessions.get(id);
    if (!s) return;
    await this.store.setBudgets('session', id, s.owner, []);
    this.sessions.delete(id);
  }
}

function use(a: Applicable, t: Total): BudgetUse {
  return {
    scope: a.subject.scope,
    ...(a.subject.scope === 'session' ? { session_id: a.subject.id } : {}),
    ...a.spec,
    used_tokens: t.tokens,
    used_cost: Math.round(t.cost * 1e6) / 1e6,
    resets_at: t.resets === null ? null : new Date(t.resets).toISOString(),
  };
}

function describe(a: Applicable, t: Total): string {
  const limits = [a.spec.max_tokens !== null ? `${t.tokens} of ${a.spec.max_tokens} tokens` : '', a.spec.max_cost !== null ? `${round(t.cost)} of ${a.spec.max_cost} cost` : '']
    .filter(Boolean)
    .join(', ');
  const per = a.spec.period === 'total' ? 'total' : `per ${a.spec.period}`;
  return `the ${a.subject.scope} budget (${per}: ${limits})`;
}

const round = (n: number) => Math.round(n * 10000) / 10000;

function resetText(resets: number | null): string {
  return resets === null ? 'it does not reset (a total budget: raise or remove it)' : `it resets at ${new Date(resets).toISOString()}`;
}
