import type { Database } from '../db/index.js';
import { AppError, Errors } from '../server/errors.js';

/** What a claim of a session hands the run: the session's settings as stored. */
export interface Claimed {
  mode: 'planning' | 'executing';
  model: string | null;
  disable_tools: string[];
  env: Record<string, string> | null;
  memory_enabled: boolean;
  /** memory_enabled, and the user has a memory in use: a recall can find something. */
  recall: boolean;
  /** The session's highest stored event seq and the sequence its next turn takes, as of the claim. */
  last_seq: number;
  next_sequence: number;
}

export interface OrphanRow {
  id: string;
  user_id: string;
  model: string | null;
  run_owner: string | null;
}

/**
 * Leases (CONTRACT 11): a node renews the lease of its runs (its instance heartbeat) every 5 s; a
 * run whose lease is older than 30 s is closed by any live node at its next check (every 5 s), so
 * within about 35 s of its owner's death, without a restart.
 */
export const LEASE_RENEW_MS = 5000;
export const STALE_SECONDS = 30;

/**
 * The SQL of run ownership, in one place: which process runs which session (sessions.run_owner),
 * which processes are alive (service_instances heartbeats), and the atomic claim and release.
 */
export class RunStore {
  constructor(private readonly db: Database) {}

  async register(instanceId: string) {
    await this.db.sql('insert into service_instances (id) values (?)', [instanceId]);
  }

  async heartbeat(instanceId: string) {
    await this.db.sql('update service_instances set heartbeat_at = now() where id = ?', [instanceId]);
  }

  async unregister(instanceId: string) {
    await this.db.sql('delete from service_instances where id = ?', [instanceId]);
  }

  async status(userId: string, sessionId: string): Promise<string | null> {
    const [row] = await this.db.sql<{ status: string }>('select status from sessions where id = ? and user_id = ?', [sessionId, userId]);
    return row?.status ?? null;
  }

  /**
   * Atomically move a session from one of `from` to `running`, owned by `owner`, while the user has
   * fewer than `maxPerUser` running sessions. Throws NOT_FOUND, SESSION_BUSY, RATE_LIMITED or
   * INVALID_STATE when it cannot.
   */
  async claim(userId: string, sessionId: string, from: string[], owner: string, maxPerUser: number): Promise<Claimed> {
    const rows = await this.db.sql<Claimed>(
      `update sessions set status = 'running', run_owner = ?, updated_at = now()
       where id = ? and user_id = ? and status in (${from.map(() => '?').join(', ')})
         and (select count(*) from sessions r where r.user_id = ? and r.status = 'running') < ?
       returning mode, model, disable_tools, memory_enabled,
         memory_enabled and exists (select 1 from memories m where m.user_id = sessions.user_id and not m.disabled and m.superseded_by is null) as recall,
         -- The user's default env bucket under the session's own env (CONTRACT 10).
         coalesce((select b.env from env_buckets b where b.user_id = sessions.user_id and b.bucket = 'default'), '{}'::jsonb) || coalesce(env, '{}'::jsonb) as env,
         (select coalesce(max(e.seq), 0)::int from session_events e where e.session_id = sessions.id) as last_seq,
         (select coalesce(max(t.sequence) + 1, 0)::int from turns t where t.session_id = sessions.id) as next_sequence`,
      [owner, sessionId, userId, ...from, userId, maxPerUser],
    );
    if (rows.length) return rows[0];
    const status = await this.status(userId, sessionId);
    if (!status) throw Errors.notFound('session');
    if (status === 'running') throw Errors.sessionBusy();
    if (from.includes(status)) throw new AppError(429, 'RATE_LIMITED', `at most ${maxPerUser} chats may run at once for one user; wait for one to end`);
    throw new AppError(409, 'INVALID_STATE', `the session is ${status}`);
  }

  /** End the claim: the session takes its final status, unless another owner holds it by now. */
  async release(sessionId: string, owner: string, status: string) {
    await this.db.sql('update sessions set status = ?, run_owner = null, updated_at = now() where id = ? and run_owner = ?', [status, sessionId, owner]);
  }

  /**
   * Running sessions nobody runs: their owner stopped heartbeating, or the owner is `self` but the
   * session is not among `selfActive` (a claim this process lost track of must not stay running).
   */
  async orphans(self: string, selfActive: string[]): Promise<OrphanRow[]> {
    return this.db.sql<OrphanRow>(
      `select id, user_id, model, run_owner from sessions where status = 'running' and (
         run_owner is null
         or (run_owner = ? and not (id = any(string_to_array(?, ','))))
         or (run_owner <> ? and run_owner not in (select id from service_instances where heartbeat_at > now() - interval '${STALE_SECONDS} seconds')))`,
      [self, selfActive.join(','), self],
    );
  }

  /** Take a run over for closing; two processes recovering at once must not both close it. */
  async takeOver(o: OrphanRow, marker: string): Promise<boolean> {
    const taken = await this.db.sql(`update sessions set run_owner = ? where id = ? and status = 'running' and run_owner is not distinct from ? returning id`, [marker, o.id, o.run_owner]);
    return taken.length > 0;
  }

  async forgetDeadInstances() {
    await this.db.sql(`delete from service_instances where heartbeat_at < now() - interval '1 day'`);
  }
}
