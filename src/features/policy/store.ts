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

  /**
   * The user's rules and those of the given sessions that have any, in one round trip: what the
   * sandbox's path denies are read from before each command (docs/policy-paths.md).
   */
  async pathRules(userId: string, sessionIds: string[]): Promise<{ user: Rule[]; sessions: Record<string, Rule[]> }> {
    const rows = await this.db.sql<{ session_id: string | null; rules: Rule[] }>(
      `select null::text as session_id, rules from user_policies where user_id = ?
       union all
       select session_id, rules from session_policies
        where session_id in (select jsonb_array_elements_text(?::jsonb)) and jsonb_array_length(rules) > 0`,
      [userId, JSON.stringify(sessionIds)],
    );
    const out = { user: [] as Rule[], sessions: {} as Record<string, Rule[]> };
    for (const r of rows) {
      if (r.session_id === null) out.user = r.rules;
      else out.sessions[r.session_id] = r.rules;
    }
    return out;
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
