import type { Database, Sql } from '../../platform/db/index.js';
import type { ClaimWrite } from '../../core/engine/hooks.js';
import type { Skipped } from './scan.js';

export interface CheckpointRow {
  id: string;
  session_id: string;
  turn_id: string;
  branch_id: string;
  sequence: number;
  label: string;
  files: number;
  tree: string | null;
  skipped: Skipped[];
  created_at: Date;
}

/** A checkpoint to store: its branch is the session's active one when it is written. */
export type NewCheckpoint = Omit<CheckpointRow, 'created_at' | 'branch_id'>;

type Query = <T>(query: string, params?: unknown[]) => Promise<T[]>;

/** Checkpoints and branches (the SQL of time travel). */
export class TimeTravelStore {
  private constructor(private readonly sql: Query) {}

  /** A session's branches, as an archive holds them. */
  archivedBranches(sessionId: string): Promise<Record<string, unknown>[]> {
    return this.sql('select id, parent_id, fork_sequence, deprecated, created_at from session_branches where session_id = ? order by created_at', [sessionId]);
  }

  /** A session's checkpoints (their position; snapshots stay behind), as an archive holds them. */
  archivedCheckpoints(sessionId: string): Promise<Record<string, unknown>[]> {
    return this.sql('select id, turn_id, branch_id, sequence, label, files, skipped, created_at from checkpoints where session_id = ? order by sequence', [sessionId]);
  }

  /** An imported branch, in the caller's transaction `q`. */
  async insertArchivedBranch(q: Sql, b: { session_id: string; id: unknown; parent_id: unknown; fork_sequence: unknown; deprecated: unknown[] }): Promise<void> {
    await q('insert into session_branches (session_id, id, parent_id, fork_sequence, deprecated) values (?, ?, ?, ?, ?::jsonb)', [
      b.session_id,
      b.id,
      b.parent_id,
      b.fork_sequence,
      JSON.stringify(b.deprecated),
    ]);
  }

  /** An imported checkpoint without its snapshot, in the caller's transaction `q`. */
  async insertArchivedCheckpoint(q: Sql, c: { id: unknown; session_id: string; turn_id: unknown; branch_id: unknown; sequence: number; label: string; files: number; skipped: Skipped[] }): Promise<void> {
    await q('insert into checkpoints (id, session_id, turn_id, branch_id, sequence, label, files, tree, skipped) values (?, ?, ?, ?, ?, ?, ?, null, ?::jsonb)', [
      c.id,
      c.session_id,
      c.turn_id,
      c.branch_id,
      c.sequence,
      c.label,
      c.files,
      JSON.stringify(c.skipped),
    ]);
  }

  /**
   * Deletes all but the newest `keep` checkpoints of each branch. Kept whatever their rank: each
   * branch's head (the newest, as keep >= 1) and the checkpoint a child branch forked from (the
   * parent's newest at or before the fork), which the child's view and a rewind still need.
   */
  async pruneCheckpoints(keep: number): Promise<number> {
    const rows = await this.sql<{ id: string }>(
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

  static of(db: Database): TimeTravelStore {
    return new TimeTravelStore((q, p = []) => db.sql(q, p));
  }

  /**
   * Run `fn` in one transaction holding the session's row lock, with the session's status: a run
   * cannot start (its claim waits for the lock) until `fn` is done, on any node.
   */
  static async locked<T>(db: Database, sessionId: string, fn: (store: TimeTravelStore, status: string | null) => Promise<T>): Promise<T> {
    return db.transaction(async (q) => {
      const [row] = await q<{ status: string }>('select status from sessions where id = ? for update', [sessionId]);
      return fn(new TimeTravelStore(q), row?.status ?? null);
    });
  }

  /** Checkpoints in one statement, each on its session's active branch. */
  async insertCheckpoints(rows: NewCheckpoint[]): Promise<void> {
    if (!rows.length) return;
    await this.sql(
      `insert into checkpoints (id, session_id, turn_id, branch_id, sequence, label, files, tree, skipped)
       values ${rows.map(() => '(?, ?, ?, (select active_branch from sessions where id = ?), ?, ?, ?, ?, ?::jsonb)').join(', ')}`,
      rows.flatMap((c) => [c.id, c.session_id, c.turn_id, c.session_id, c.sequence, c.label, c.files, c.tree, JSON.stringify(c.skipped)]),
    );
  }

  /**
   * A checkpoint stored by a run's claim, in its statement (the run.claim hook): on the claimed
   * session's active branch, at the sequence its user turn takes (`src`: the claimed row).
   */
  checkpointFrom(src: string, c: Omit<NewCheckpoint, 'session_id' | 'sequence'>): ClaimWrite {
    return {
      sql: `insert into checkpoints (id, session_id, turn_id, branch_id, sequence, label, files, tree, skipped)
        select ?::text, s.id, ?::text, s.active_branch, s.next_sequence, ?::text, ?::int, ?::text, ?::jsonb from ${src} s`,
      params: [c.id, c.turn_id, c.label, c.files, c.tree, JSON.stringify(c.skipped)],
    };
  }

  /**
   * AGENTSVC_CHECKPOINT_KEEP as checkpoints come: on the session's active branch, every checkpoint
   * but the newest `keep` goes, except one a child branch was forked from (the newest at or before
   * its fork point), which its branch still needs. Answers how many went.
   */
  async pruneActiveBranch(sessionId: string, keep: number): Promise<number> {
    const rows = await this.sql<{ id: string }>(
      `delete from checkpoints c
        where c.session_id = ? and c.branch_id = (select active_branch from sessions where id = ?)
          and c.id not in (select n.id from checkpoints n where n.session_id = c.session_id and n.branch_id = c.branch_id
                            order by n.sequence desc, n.created_at desc limit ?)
          and not exists (select 1 from session_branches b
                           where b.session_id = c.session_id and b.parent_id = c.branch_id and c.sequence <= b.fork_sequence
                             and not exists (select 1 from checkpoints k where k.session_id = c.session_id and k.branch_id = c.branch_id
                                                and k.sequence > c.sequence and k.sequence <= b.fork_sequence))
       returning c.id`,
      [sessionId, sessionId, keep],
    );
    return rows.length;
  }

  async checkpoint(sessionId: string, id: string): Promise<CheckpointRow | null> {
    return (await this.sql<CheckpointRow>('select * from checkpoints where id = ? and session_id = ?', [id, sessionId]))[0] ?? null;
  }

  /** Checkpoints whose user turn is in the branch's view (default: the active branch), oldest first. */
  list(sessionId: string, branchId?: string): Promise<CheckpointRow[]> {
    return this.sql<CheckpointRow>(
      `with recursive chain as (
         select a.id, b0.parent_id, b0.fork_sequence, 2147483647 as upto
         from (select coalesce(?, active_branch) as id from sessions where id = ?) a
         left join session_branches b0 on b0.session_id = ? and b0.id = a.id
         union all
         select c.parent_id, p.parent_id, p.fork_sequence, c.fork_sequence
         from chain c left join session_branches p on p.session_id = ? and p.id = c.parent_id
         where c.parent_id is not null
       )
       select k.* from checkpoints k join chain c on k.branch_id = c.id and k.sequence < c.upto
       where k.session_id = ? order by k.sequence`,
      [branchId ?? null, sessionId, sessionId, sessionId, sessionId],
    );
  }

  async activeBranch(sessionId: string): Promise<string> {
    return (await this.sql<{ b: string }>('select active_branch as b from sessions where id = ?', [sessionId]))[0].b;
  }

  /** The newest checkpoint made on a branch itself (its latest state of files, when it has no tip). */
  async lastOn(sessionId: string, branchId: string): Promise<CheckpointRow | null> {
    return (await this.sql<CheckpointRow>('select * from checkpoints where session_id = ? and branch_id = ? order by sequence desc limit 1', [sessionId, branchId]))[0] ?? null;
  }

  async tipTree(sessionId: string, branchId: string): Promise<string | null> {
    return (await this.sql<{ t: string | null }>('select tip_tree as t from session_branches where session_id = ? and id = ?', [sessionId, branchId]))[0]?.t ?? null;
  }

  /** Remember the files a branch had when it was left (main gets its row then). */
  async setTip(sessionId: string, branchId: string, tree: string | null): Promise<void> {
    await this.sql(
      `insert into session_branches (session_id, id, parent_id, fork_sequence, tip_tree) values (?, ?, null, null, ?)
       on conflict (session_id, id) do update set tip_tree = excluded.tip_tree`,
      [sessionId, branchId, tree],
    );
  }

  async createBranch(sessionId: string, id: string, parentId: string, forkSequence: number): Promise<void> {
    await this.sql('insert into session_branches (session_id, id, parent_id, fork_sequence) values (?, ?, ?, ?)', [sessionId, id, parentId, forkSequence]);
  }

  async checkpointOfTurn(sessionId: string, turnId: string): Promise<CheckpointRow | null> {
    return (await this.sql<CheckpointRow>('select * from checkpoints where session_id = ? and turn_id = ? order by created_at desc limit 1', [sessionId, turnId]))[0] ?? null;
  }

  async setDeprecated(sessionId: string, branchId: string, ids: string[]): Promise<void> {
    await this.sql('update session_branches set deprecated = ?::jsonb where session_id = ? and id = ?', [JSON.stringify(ids), sessionId, branchId]);
  }

  async activate(sessionId: string, branchId: string): Promise<void> {
    await this.sql('update sessions set active_branch = ?, updated_at = now() where id = ?', [branchId, sessionId]);
  }
}
