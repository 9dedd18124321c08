import type { Database } from '../../platform/db/index.js';

/** The SQL of retention: which sessions are old enough to go, and checkpoints beyond the newest N. */
export class RetentionStore {
  constructor(private readonly db: Database) {}

  /** Unpinned sessions not updated for `days`, oldest first; a running one waits for the next sweep. */
  expiredSessions(days: number, limit: number): Promise<{ id: string; user_id: string }[]> {
    return this.db.sql(
      `select id, user_id from sessions
        where not is_pinned and status <> 'running' and updated_at < now() - make_interval(days => ?)
        order by updated_at limit ?`,
      [days, limit],
    );
  }

  /**
   * Deletes all but the newest `keep` checkpoints of each branch. Kept whatever their rank: each
   * branch's head (the newest, as keep >= 1) and the checkpoint a child branch forked from (the
   * parent's newest at or before the fork), which the child's view and a rewind still need.
   */
  async pruneCheckpoints(keep: number): Promise<number> {
    const rows = await this.db.sql<{ id: string }>(
      `with ranked as (
         select id, row_number() over (partition by session_id, branch_id order by sequence desc, created_at desc) as rn
         from checkpoints
       ), forked_from as (
         select (select k.id from checkpoints k
                  where k.session_id = b.session_id and k.branch_id = b.parent_id and k.sequence <= b.fork_sequence
                  order by k.sequence desc limit 1) as id
         from session_branches b where b.parent_id is not null
       )
       delete from checkpoints c using ranked r
        where c.id = r.id and r.rn > ? and c.id not in (select id from forked_from where id is not null)
       returning c.id`,
      [keep],
    );
    return rows.length;
  }
}
