import type { Database } from '../../platform/db/index.js';

export interface Deadline {
  session_id: string;
  user_id: string;
  /** timeout_seconds of the rule that asked. */
  seconds: number;
  on_timeout: 'deny' | 'allow';
}

/** The table `approval_deadlines`: approvals whose rule has timeout_seconds, until decided. */
export class DeadlineStore {
  constructor(private readonly db: Database) {}

  async set(callId: string, sessionId: string, userId: string, deadline: Date, onTimeout: 'deny' | 'allow'): Promise<void> {
    await this.db.sql(
      `insert into approval_deadlines (tool_call_id, session_id, user_id, deadline, on_timeout) values (?, ?, ?, ?, ?)
       on conflict (tool_call_id) do update set deadline = excluded.deadline, on_timeout = excluded.on_timeout`,
      [callId, sessionId, userId, deadline, onTimeout],
    );
  }

  async get(callId: string): Promise<Deadline | null> {
    const [row] = await this.db.sql<Deadline>(
      'select session_id, user_id, round(extract(epoch from deadline - asked_at))::int as seconds, on_timeout from approval_deadlines where tool_call_id = ?',
      [callId],
    );
    return row ?? null;
  }

  async forSessions(sessionIds: string[]): Promise<Map<string, { deadline: Date; on_timeout: 'deny' | 'allow' }>> {
    const rows = await this.db.sql<{ tool_call_id: string; deadline: Date; on_timeout: 'deny' | 'allow' }>(
      'select tool_call_id, deadline, on_timeout from approval_deadlines where session_id in (select jsonb_array_elements_text(?::jsonb))',
      [JSON.stringify(sessionIds)],
    );
    return new Map(rows.map((r) => [r.tool_call_id, { deadline: new Date(r.deadline), on_timeout: r.on_timeout }]));
  }

  async remove(callId: string): Promise<void> {
    await this.db.sql('delete from approval_deadlines where tool_call_id = ?', [callId]);
  }
}
