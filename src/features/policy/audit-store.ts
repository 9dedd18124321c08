import type { Database } from '../../platform/db/index.js';
import { randomToken } from '../../platform/lib/ids.js';
import type { Rule, Source } from './rules.js';

/** The tool policy's decisions, and `credential_set`: a personal model key set, replaced, deleted or re-encrypted (docs/model-keys.md). */
export type AuditAction = 'allowed' | 'denied' | 'asked' | 'approved' | 'rejected' | 'credential_set';
export const AUDIT_ACTIONS: readonly AuditAction[] = ['allowed', 'denied', 'asked', 'approved', 'rejected', 'credential_set'];

export interface AuditRecord {
  id: string;
  at: string;
  user_id: string;
  session_id: string;
  /** Null for a connection the egress proxy refused when no tool call is known. */
  tool_call_id: string | null;
  tool_name: string;
  /** The call's arguments as JSON text, secrets masked as in shares. */
  arguments: string;
  action: AuditAction;
  rule: Rule | null;
  source: Source | null;
  /** `policy`, `unattended`, or the user id of the person who answered. */
  decided_by: string;
}

export interface AuditQuery {
  userId?: string;
  sessionId?: string;
  from?: Date;
  to?: Date;
  action?: AuditAction;
  limit: number;
  offset: number;
}

/** The table `policy_audit`: every decision of the tool policy (docs/policy.md). */
export class AuditStore {
  constructor(private readonly db: Database) {}

  async add(r: Omit<AuditRecord, 'id' | 'at'>): Promise<void> {
    await this.db.sql(
      `insert into policy_audit (id, user_id, session_id, tool_call_id, tool_name, arguments, action, rule, source, decided_by)
       values (?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)`,
      [`aud_${randomToken(20)}`, r.user_id, r.session_id, r.tool_call_id, r.tool_name, r.arguments, r.action, r.rule ? JSON.stringify(r.rule) : null, r.source, r.decided_by],
    );
  }

  /** When each call of these sessions was last asked for an approval (the inbox's `asked_at`). */
  async askedAt(sessionIds: string[]): Promise<Map<string, Date>> {
    if (!sessionIds.length) return new Map();
    const rows = await this.db.sql<{ tool_call_id: string; at: Date }>(
      `select tool_call_id, max(at) as at from policy_audit where session_id in (select jsonb_array_elements_text(?::jsonb)) and action = 'asked' group by tool_call_id`,
      [JSON.stringify(sessionIds)],
    );
    return new Map(rows.map((r) => [r.tool_call_id, new Date(r.at)]));
  }

  /** Newest first; `total` counts every match. */
  async list(q: AuditQuery): Promise<{ items: AuditRecord[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, v: unknown) => {
      where.push(sql);
      params.push(v);
    };
    if (q.userId) add('user_id = ?', q.userId);
    if (q.sessionId) add('session_id = ?', q.sessionId);
    if (q.from) add('at >= ?', q.from);
    if (q.to) add('at <= ?', q.to);
    if (q.action) add('action = ?', q.action);
    const cond = where.length ? `where ${where.join(' and ')}` : '';
    const [count] = await this.db.sql<{ n: string }>(`select count(*) as n from policy_audit ${cond}`, params);
    const rows = await this.db.sql<AuditRecord & { at: Date }>(
      `select id, at, user_id, session_id, tool_call_id, tool_name, arguments, action, rule, source, decided_by
       from policy_audit ${cond} order by at desc, id desc limit ? offset ?`,
      [...params, q.limit, q.offset],
    );
    return { items: rows.map((r) => ({ ...r, at: new Date(r.at).toISOString() })), total: Number(count.n) };
  }
}
