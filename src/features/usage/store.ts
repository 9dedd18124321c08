import type { Database } from '../../platform/db/index.js';
import { WriteBatcher } from '../../platform/lib/write-batcher.js';
import type { BudgetSpec } from '../../platform/config/models.js';

/** One model call as recorded (docs/models-and-usage.md). */
export interface UsageRecord {
  user_id: string;
  session_id: string;
  turn_id: string | null;
  run_id: string | null;
  model: string;
  outcome: string;
  /** `turn` (a call of the agent loop) or `compaction` (a summary). */
  purpose: 'turn' | 'compaction';
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  cost: number | null;
  estimated: boolean;
  attempts: number;
  fallback_from: string | null;
  started_at: Date;
  duration_ms: number;
  ttft_ms: number | null;
  /** Whose key paid: the user's own (docs/model-keys.md) or the install's. */
  credential: 'personal' | 'install';
}

/** Costs as shown: sums of float products rounded to 1e-10 of the currency unit. */
export const roundCost = (n: number) => Math.round(n * 1e10) / 1e10;

export type GroupBy = 'day' | 'model' | 'session' | 'user' | 'credential';

export interface UsageQuery {
  /** Whose calls: one user, or everyone (an admin without user_id). */
  userId: string | null;
  sessionId?: string;
  /** Instants (inclusive from, exclusive to). */
  from?: Date;
  to?: Date;
  groupBy: GroupBy;
  timeZone: string;
}

export interface UsageRow {
  key: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: number | null;
}

export type BudgetSubject = { scope: 'install' } | { scope: 'user'; id: string } | { scope: 'session'; id: string };

const COLUMNS = [
  'user_id',
  'session_id',
  'turn_id',
  'run_id',
  'model',
  'outcome',
  'purpose',
  'input_tokens',
  'output_tokens',
  'cached_input_tokens',
  'cost',
  'estimated',
  'attempts',
  'fallback_from',
  'started_at',
  'duration_ms',
  'ttft_ms',
  'credential',
] as const;
const ROW = `(${COLUMNS.map(() => '?').join(', ')})`;

/** The SQL of model_usage and budgets. */
export class UsageStore {
  /** Model calls recorded at the same moment (runs that end together) in one statement. */
  private readonly inserts = new WriteBatcher<UsageRecord>(async (rows) => {
    await this.db.sql(
      `insert into model_usage (${COLUMNS.join(', ')}) values ${rows.map(() => ROW).join(', ')}`,
      rows.flatMap((r) => COLUMNS.map((c) => r[c])),
    );
  });

  constructor(private readonly db: Database) {}

  insert(r: UsageRecord): Promise<void> {
    return this.inserts.add(r);
  }

  /** Tokens (in + out) and cost spent by a budget's subject since `from`. */
  async spent(subject: BudgetSubject, from: Date): Promise<{ tokens: number; cost: number }> {
    const where = subject.scope === 'install' ? '' : subject.scope === 'user' ? 'user_id = ? and ' : 'session_id = ? and ';
    const params = subject.scope === 'install' ? [from] : [subject.id, from];
    const [row] = await this.db.sql<{ tokens: string | null; cost: number | null }>(
      `select sum(input_tokens + output_tokens) as tokens, sum(cost) as cost from model_usage where ${where}started_at >= ?`,
      params,
    );
    return { tokens: Number(row?.tokens ?? 0), cost: Number(row?.cost ?? 0) };
  }

  async report(q: UsageQuery): Promise<UsageRow[]> {
    const key = {
      day: `to_char(started_at at time zone ?, 'YYYY-MM-DD')`,
      model: 'model',
      session: 'session_id',
      user: 'user_id',
      credential: 'credential',
    }[q.groupBy];
    const k = this.db.knex;
    const select = k('model_usage')
      .select(k.raw(`${key} as key`, q.groupBy === 'day' ? [q.timeZone] : []), k.raw('count(*) as calls, sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens, sum(cost) as cost'))
      .groupByRaw('1')
      .orderByRaw('1');
    if (q.userId) select.where('user_id', q.userId);
    if (q.sessionId) select.where('session_id', q.sessionId);
    if (q.from) select.where('started_at', '>=', q.from);
    if (q.to) select.where('started_at', '<', q.to);
    const rows: { key: string; calls: string; input_tokens: string; output_tokens: string; cost: number | null }[] = await select;
    return rows.map((r) => ({ key: r.key, calls: Number(r.calls), input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens), cost: r.cost === null ? null : roundCost(Number(r.cost)) }));
  }

  /** Every user's and session's budgets (a small table: read whole at start and refreshed). */
  async allBudgets(): Promise<{ scope: 'user' | 'session'; subject_id: string; user_id: string; budgets: BudgetSpec[] }[]> {
    return this.db.sql('select scope, subject_id, user_id, budgets from budgets');
  }

  /** `userId`: the user (scope user) or the session's owner. An empty list removes them. */
  async setBudgets(scope: 'user' | 'session', subjectId: string, userId: string, budgets: BudgetSpec[]): Promise<void> {
    if (!budgets.length) {
      await this.db.sql('delete from budgets where scope = ? and subject_id = ?', [scope, subjectId]);
      return;
    }
    await this.db.sql(
      `insert into budgets (scope, subject_id, user_id, budgets) values (?, ?, ?, ?::jsonb)
       on conflict (scope, subject_id) do update set budgets = excluded.budgets, updated_at = now()`,
      [scope, subjectId, userId, JSON.stringify(budgets)],
    );
  }
}
