import type { Database } from '../../platform/db/index.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import type { EventStore } from '../events/event-store.js';
import { SEQ_BLOCK } from '../events/events.js';
import { WriteBatcher } from '../../platform/lib/write-batcher.js';
import type { TurnStore } from '../conversation/turn-store.js';
import type { Turn } from '../conversation/turns.js';
import type { ClaimWrite } from './hook-catalogue.js';

/** What a claim of a session hands the run: the session's settings as stored. */
export interface Claimed {
  mode: 'planning' | 'executing';
  model: string | null;
  disable_tools: string[];
  env: Record<string, string> | null;
  memory_enabled: boolean;
  /** memory_enabled, and the user has a memory in use: a recall can find something. */
  recall: boolean;
  /**
   * The session's last seq (the highest stored, or a higher one its previous run may have sent),
   * the seqs reserved for this run up to `seq_reserved`, and the sequence its next turn takes.
   */
  last_seq: number;
  seq_reserved: number;
  next_sequence: number;
  /** The run's origin as recorded: an answer to a question of a scheduled or task run continues that run's origin. */
  run_origin: string;
  /** What the session was created with (a solution role, a production agent): its prompt and tools need no query more. */
  session_setup: Record<string, unknown> | null;
}

/** What a claim stores in its statement: a new message's user turn and the run's first events (see EventStore.appendFrom). */
export interface ClaimOpening {
  turn: Turn;
  content: unknown;
  events: { name: string; data: Record<string, unknown> }[];
  /** The model of a session that has none of its own (the user turn's). */
  defaultModel: string;
  /** The user turn's context window: its model's in this map (the models config), else `defaultWindow`. */
  windows: Record<string, number>;
  defaultWindow: number;
  /** Features' rows (the run.claim hook), each an insert selecting from `src`. */
  writes?: ClaimWrite[];
}

export interface OrphanRow {
  id: string;
  user_id: string;
  model: string | null;
  run_owner: string | null;
  /** The run's id and origin as its claim recorded them (null for a claim older than that). */
  run_id: string | null;
  run_origin: string | null;
}

/** A claim's end as RunStore.release writes it. */
interface Release {
  id: string;
  owner: string;
  status: string;
  last_seq: number | null;
}

/** Which run a claim starts (hooks know it by these). */
export interface RunLabel {
  id: string;
  origin: string;
}

/**
 * Leases (docs/scale-out.md): a node renews the lease of its runs (its instance heartbeat) every 5 s; a
 * run whose lease is older than AGENTSVC_NODE_STALE_SECONDS (30 s) is closed by any live node at its
 * next check (at each renewal), so within about 35 s of its owner's death, without a restart.
 */
export const LEASE_RENEW_MS = 5000;
export const STALE_SECONDS = 30;
/** The renewal (and check) period: 5 s, or a sixth of a shorter stale time, so a live node misses five before it looks dead. */
export const leaseRenewMs = (staleSeconds: number) => Math.min(LEASE_RENEW_MS, Math.floor((staleSeconds * 1000) / 6));

/**
 * The SQL of run ownership, in one place: which process runs which session (sessions.run_owner),
 * which processes are alive (service_instances heartbeats), and the atomic claim and release.
 *
 * sessions.last_seq bounds every seq the session may have sent: while a run holds the session it
 * is the run's reservation (raised a block at a time before seqs under it are sent), at rest the
 * run's last seq. A claim starts above it, so a crashed run's seqs are never given out again.
 */
export class RunStore {
  /**
   * Releases of the same moment in one statement (the runs that end together: at paced K=200 each
   * run's release was its own round trip). The same claim released twice in one batch: its last.
   */
  private readonly releases = new WriteBatcher<Release>(async (rows) => {
    const last = [...new Map(rows.map((r) => [`${r.id} ${r.owner}`, r])).values()];
    await this.db.sql(
      `update sessions s set status = x.status, run_owner = null, last_seq = coalesce(x.last_seq, s.last_seq), updated_at = now()
       from jsonb_to_recordset(?::jsonb) as x(id text, owner text, status text, last_seq int) where s.id = x.id and s.run_owner = x.owner`,
      [JSON.stringify(last)],
    );
  });

  constructor(
    private readonly db: Database,
    /** The stores whose inserts a claim with an opening makes in its statement. */
    private readonly opening?: { turns: TurnStore; events: EventStore },
    /** A node whose heartbeat is older than this is dead (AGENTSVC_NODE_STALE_SECONDS). */
    private readonly staleSeconds = STALE_SECONDS,
  ) {}

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
   *
   * The session is found by its primary key only: `user_id || ''` is checked on that row, not
   * searched in an index. Without it, a plan made while the table's statistics were stale (a burst
   * of new sessions) walked the user's index over all of the user's sessions and filtered the id:
   * 819 rows and 0.55 ms of the claim's 0.76 ms for a user with 820 sessions (auto_explain,
   * bench/streaming.ts paced=200 n=2), growing with every session the user has.
   */
  async claim(userId: string, sessionId: string, from: string[], owner: string, maxPerUser: number, run: RunLabel, opening?: ClaimOpening): Promise<Claimed> {
    const update = `update sessions set status = 'running', run_owner = ?, run_id = ?,
         run_origin = case when ?::text = 'answer' and run_origin in ('scheduled', 'task', 'replay') then run_origin else ?::text end, updated_at = now(),
         last_seq = greatest(last_seq, (select coalesce(max(e.seq), 0)::int from session_events e where e.session_id = sessions.id)) + ${SEQ_BLOCK}
       where id = ? and user_id || '' = ? and status in (${from.map(() => '?').join(', ')})
         and (select count(*) from sessions r where r.user_id = ? and r.status = 'running') < ?
       returning id, active_branch, mode, model, disable_tools, memory_enabled, run_origin, session_setup,
         memory_enabled and exists (select 1 from memories m where m.user_id = sessions.user_id and not m.disabled and m.superseded_by is null) as recall,
         -- The user's default env bucket under the session's own env (docs/memories-and-settings.md).
         coalesce((select b.env from env_buckets b where b.user_id = sessions.user_id and b.bucket = 'default'), '{}'::jsonb) || coalesce(env, '{}'::jsonb) as env,
         last_seq - ${SEQ_BLOCK} as last_seq, last_seq as seq_reserved,
         (select coalesce(max(t.sequence) + 1, 0)::int from turns t where t.session_id = sessions.id) as next_sequence`;
    const params = [owner, run.id, run.origin, run.origin, sessionId, userId, ...from, userId, maxPerUser];
    const rows = opening ? await this.claimOpening(update, params, opening) : await this.db.sql<Claimed>(update, params);
    if (rows.length) return rows[0];
    const status = await this.status(userId, sessionId);
    if (!status) throw Errors.notFound('session');
    if (status === 'running') throw Errors.sessionBusy();
    if (from.includes(status)) throw new AppError(429, 'RATE_LIMITED', `at most ${maxPerUser} chats may run at once for one user; wait for one to end`);
    throw new AppError(409, 'INVALID_STATE', `the session is ${status}`);
  }

  /**
   * The claim and the run's opening in one statement (one round trip): the user turn takes the
   * next sequence and the session's model, the first events the seqs after the last one; when the
   * claim fails, nothing is stored.
   */
  private claimOpening(update: string, params: unknown[], o: ClaimOpening): Promise<Claimed[]> {
    if (!this.opening) throw new Error('RunStore: a claim with an opening needs the turn and event stores');
    const turn = this.opening.turns.insertFrom('src', o.turn, o.content);
    const events = this.opening.events.appendFrom('src', o.events);
    const writes = o.writes ?? [];
    const window = 'coalesce((?::jsonb ->> coalesce(c.model, ?::text))::int, ?::int)';
    const windowParams = [JSON.stringify(o.windows), o.defaultModel, o.defaultWindow];
    return this.db.sql<Claimed>(
      `with claimed as (${update}),
       src as (select c.*, coalesce(c.model, ?::text) as turn_model, ${window} as turn_window,
         jsonb_build_object('turn', jsonb_build_object('sequence', c.next_sequence, 'model', coalesce(c.model, ?::text), 'context_window', ${window}), 'mode', to_jsonb(c.mode)) as fill from claimed c),
       t as (${turn.sql}),
       e as (${events.sql})${writes.map((w, i) => `,\n       w${i} as (${w.sql})`).join('')}
       select * from src`,
      [...params, o.defaultModel, ...windowParams, o.defaultModel, ...windowParams, ...turn.params, ...events.params, ...writes.flatMap((w) => w.params)],
    );
  }

  /**
   * End the claim: the session takes its final status and `lastSeq` (the last seq the run gave
   * out; its unused reservation is given back), unless another owner holds it by now.
   */
  release(sessionId: string, owner: string, status: string, lastSeq: number | null): Promise<void> {
    return this.releases.add({ id: sessionId, owner, status, last_seq: lastSeq });
  }

  /** Reserve the session's seqs up to `upTo` before they are sent; false when `owner` no longer runs it. */
  async reserveSeqs(sessionId: string, owner: string, upTo: number): Promise<boolean> {
    const rows = await this.db.sql('update sessions set last_seq = greatest(last_seq, ?) where id = ? and run_owner = ? returning id', [upTo, sessionId, owner]);
    return rows.length > 0;
  }

  /**
   * Running sessions nobody runs: their owner stopped heartbeating, or the owner is `self` but the
   * session is not among `selfActive` (a claim this process lost track of must not stay running).
   * `othersDead`: every other owner is gone, lease or not (a single node's start: no other process
   * runs chats on its database).
   */
  async orphans(self: string, selfActive: string[], othersDead = false): Promise<OrphanRow[]> {
    return this.db.sql<OrphanRow>(
      `select id, user_id, model, run_owner, run_id, run_origin from sessions where status = 'running' and (
         run_owner is null
         or (run_owner = ? and not (id = any(string_to_array(?, ','))))
         or (run_owner <> ? and (?::boolean or run_owner not in (select id from service_instances where heartbeat_at > now() - ?::int * interval '1 second'))))`,
      [self, selfActive.join(','), self, othersDead, this.staleSeconds],
    );
  }

  /**
   * Take a run over for closing; two processes recovering at once must not both close it. Answers
   * where the closing events' seqs start (above everything the dead run may have sent) and their
   * reservation, or null when another process took it first.
   */
  async takeOver(o: OrphanRow, marker: string): Promise<{ last_seq: number; seq_reserved: number } | null> {
    const [taken] = await this.db.sql<{ last_seq: number; seq_reserved: number }>(
      `update sessions set run_owner = ?,
         last_seq = greatest(last_seq, (select coalesce(max(e.seq), 0)::int from session_events e where e.session_id = sessions.id)) + ${SEQ_BLOCK}
       where id = ? and status = 'running' and run_owner is not distinct from ?
       returning last_seq - ${SEQ_BLOCK} as last_seq, last_seq as seq_reserved`,
      [marker, o.id, o.run_owner],
    );
    return taken ?? null;
  }

  async forgetDeadInstances() {
    await this.db.sql(`delete from service_instances where heartbeat_at < now() - interval '1 day'`);
  }
}
