import type { Database } from '../../platform/db/index.js';
import type { Rule } from './rules.js';

/** The tables `user_policies` and `session_policies`: rules set over REST, and session approvals. */
export class PolicyStore {
  constructor(private readonly db: Database) {}

  /** The user's and the session's rules and approvals, in one round trip (read for every tool call a policy looks at). */
  async forCall(userId: string, sessionId: string): Promise<{ user: Rule[]; session: Rule[]; approvals: Rule[] }> {
    const [row] = await this.db.sql<{ user: Rule[] | null; session: Rule[] | null; approvals: Rule[] | null }>(
      `select (select rules from user_policies where user_id = ?) as "user",
              (select rules from session_policies where session_id = ?) as "session",
              (select approvals from session_policies where session_id = ?) as approvals`,
      [userId, sessionId, sessionId],
    );
    return { user: row?.user ?? [], session: row?.session ?? [], approvals: row?.approvals ?? [] };
  }

  async userRules(userId: string): Promise<Rule[]> {
    const [row] = await this.db.sql<{ rules: Rule[] }>('select rules from user_policies where user_id = ?', [userId]);
    return row?.rules ?? [];
  }

  async setUserRules(userId: string, rules: Rule[]): Promise<void> {
    await this.db.sql(
      `insert into user_policies (user_id, rules) values (?, ?::jsonb)
       on conflict (user_id) do update set rules = excluded.rules, updated_at = now()`,
      [userId, JSON.stringify(rules)],
    );
  }

  async setSessionRules(sessionId: string, rules: Rule[]): Promise<void> {
    await this.db.sql(
      `insert into session_policies (session_id, rules) values (?, ?::jsonb)
       on conflict (session_id) do update set rules = excluded.rules, updated_at = now()`,
      [sessionId, JSON.stringify(rules)],
    );
  }

  /** Add approvals not yet recorded (one statement: two answers at once lose neither). */
  async addApprovals(sessionId: string, rules: Rule[]): Promise<void> {
    if (!rules.length) return;
    await this.db.sql(
      `insert into session_policies (session_id, approvals) values (?, ?::jsonb)
       on conflict (session_id) do update set approvals = session_policies.approvals ||
         (select coalesce(jsonb_agg(r), '[]'::jsonb) from jsonb_array_elements(excluded.approvals) r where not session_policies.approvals @> jsonb_build_array(r)),
         updated_at = now()`,
      [sessionId, JSON.stringify(rules)],
    );
  }
}
