import type { Database, Sql } from '../../platform/db/index.js';
import { storableJson, storableText } from '../../platform/lib/json.js';
import { WriteBatcher } from '../../platform/lib/write-batcher.js';
import { lastCompaction } from './history.js';
import { COMPACTION_FIELDS, turnText, type Turn } from './turns.js';

interface TurnRow {
  id: string;
  sequence: number;
  turn_id: string;
  loop_id: string;
  kind: Turn['kind'];
  role: Turn['role'];
  status: Turn['status'];
  blocks: Turn['blocks'];
  tool_calls: Turn['tool_calls'];
  content: unknown;
  model: string | null;
  usage: Turn['usage'];
  duration_ms: number;
  started_at: Date;
  context_window: number;
  memory_refs: unknown[] | null;
  parent_fork_tool_call_id: string | null;
  extra: Record<string, unknown> | null;
}

export interface StoredTurn {
  turn: Turn;
  /** The user's message as sent (string or content parts), for rebuilding model history. */
  content: unknown;
}

function fromRow(r: TurnRow): StoredTurn {
  return {
    turn: {
      id: r.id,
      sequence: r.sequence,
      turn_id: r.turn_id,
      loop_id: r.loop_id,
      kind: r.kind,
      role: r.role,
      status: r.status,
      blocks: r.blocks,
      tool_calls: r.tool_calls,
      model: r.model ?? '',
      usage: r.usage,
      duration_ms: r.duration_ms,
      started_at: new Date(r.started_at).toISOString(),
      context_window: r.context_window,
      memory_refs: r.memory_refs,
      parent_fork_tool_call_id: r.parent_fork_tool_call_id,
      ...COMPACTION_FIELDS,
      ...((r.extra ?? {}) as object),
    },
    content: r.content,
  };
}

/** Fields beyond the columns (compaction fields, ...): stored in `extra` when set. `deprecated` is per branch, never stored here. */
function extraOf(turn: Turn): Record<string, unknown> {
  const { id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, model, usage, duration_ms, started_at, context_window, memory_refs, parent_fork_tool_call_id, deprecated, ...rest } =
    turn;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== null && v !== undefined));
}

function extraOrNull(turn: Turn): string | null {
  const e = extraOf(turn);
  return Object.keys(e).length ? storableJson(e) : null;
}

/** The columns of an imported turn, in the order of its values (src/features/portability/import.ts). */
export const ARCHIVE_COLUMNS = `id, session_id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, content, model, usage, duration_ms, started_at, context_window,
  memory_refs, parent_fork_tool_call_id, text, extra, branch_id`;
const ARCHIVE_VALUES = '(?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, ?, ?::jsonb, ?, ?, ?, null, ?, ?, ?::jsonb, ?)';

const COLUMNS =
  'id, session_id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, content, model, usage, duration_ms, started_at, context_window, memory_refs, parent_fork_tool_call_id, text, extra';
/** What a read needs: `text` (the search column, a copy of the turn's text) is written, never read back. */
const READ_COLUMNS = COLUMNS.replace(', text,', ',');
const onTurnsOfT = (columns: string) =>
  columns
    .split(', ')
    .map((c) => `t.${c}`)
    .join(', ');

/**
 * The sequence from which a loop's model history reads everything (its newest compaction with a
 * summary: `archived_until`, -1 without one) and its first user turn's, each worked out once per
 * statement. Branches and deprecation are not looked at here: `modelTurns` checks the answer.
 */
const MODEL_CUT = `coalesce((select max(coalesce((x.extra->>'archived_until')::int, x.sequence)) from turns x
  where x.session_id = ? and x.loop_id = ? and x.kind = 'compaction' and x.extra->>'summary_full' is not null and x.extra->>'failure_reason' is null), -1)`;
const MODEL_FIRST = `(select min(y.sequence) from turns y where y.session_id = ? and y.loop_id = ? and y.role = 'user')`;

/** A new turn as TurnStore.insert writes it: `extra` is JSON text or null, jsonb nulls stay jsonb null as before. */
type InsertRow = Omit<TurnRow, 'extra' | 'started_at'> & { session_id: string; started_at: string; text: string; extra: string | null };

/** Any number of new turns in one statement, each on its session's active branch (it cannot change during a run: rewinds wait for SESSION_BUSY). */
const INSERT_ROWS = `insert into turns (${COLUMNS}, branch_id)
  select x.id, x.session_id, x.sequence, x.turn_id, x.loop_id, x.kind, x.role, x.status, x.blocks, x.tool_calls, coalesce(x.content, 'null'::jsonb), x.model, x.usage,
    x.duration_ms, x.started_at, x.context_window, coalesce(x.memory_refs, 'null'::jsonb), x.parent_fork_tool_call_id, x.text, x.extra::jsonb,
    (select s.active_branch from sessions s where s.id = x.session_id)
  from jsonb_to_recordset(?::jsonb) as x(id text, session_id text, sequence int, turn_id text, loop_id text, kind text, role text, status text, blocks jsonb,
    tool_calls jsonb, content jsonb, model text, usage jsonb, duration_ms int, started_at timestamptz, context_window int, memory_refs jsonb,
    parent_fork_tool_call_id text, text text, extra text)`;

/** A finished turn as TurnStore.update writes it. */
type UpdateRow = Pick<TurnRow, 'id' | 'status' | 'blocks' | 'tool_calls' | 'usage' | 'duration_ms' | 'model' | 'context_window'> & { text: string; extra: string | null };

/** Any number of turns' updates in one statement; a turn updated twice in one batch takes its last. */
const UPDATE_ROWS = `update turns t set status = x.status, blocks = x.blocks, tool_calls = x.tool_calls, usage = x.usage, duration_ms = x.duration_ms,
    text = x.text, model = x.model, context_window = x.context_window, extra = x.extra::jsonb
  from jsonb_to_recordset(?::jsonb) as x(id text, status text, blocks jsonb, tool_calls jsonb, usage jsonb, duration_ms int, text text, model text,
    context_window int, extra text)
  where t.id = x.id`;

/** Turns of sessions; the in-flight state of a running turn lives in the loop until turn:end. */
export class TurnStore {
  private readonly inserts: WriteBatcher<InsertRow>;
  private readonly updates: WriteBatcher<UpdateRow>;

  constructor(private readonly db: Database) {
    // The rows as one JSON array (one parameter, unpacked by the server; strings made storable).
    this.inserts = new WriteBatcher(async (rows) => void (await db.sql(INSERT_ROWS, [storableJson(rows)])));
    this.updates = new WriteBatcher(async (rows) => void (await db.sql(UPDATE_ROWS, [storableJson([...new Map(rows.map((r) => [r.id, r])).values()])])));
  }

  async nextSequence(sessionId: string): Promise<number> {
    const [r] = await this.db.sql<{ n: number }>('select coalesce(max(sequence) + 1, 0)::int as n from turns where session_id = ?', [sessionId]);
    return r.n;
  }

  /** Sessions of the turns among `sessionIds` whose text matches `pattern` (ilike), newest turn first; at most `limit` rows. */
  async sessionsWithText(sessionIds: string[], pattern: string, limit: number): Promise<string[]> {
    if (!sessionIds.length) return [];
    const rows = await this.db.sql<{ session_id: string }>(
      'select session_id from turns where session_id = any(?::text[]) and text ilike ? order by started_at desc, id desc limit ?',
      [sessionIds, pattern, limit],
    );
    return rows.map((r) => r.session_id);
  }

  /** A session's turns for an archive: how many, the last sequence, their stored size. */
  async archiveSize(sessionId: string): Promise<{ n: string; last: number | null; size: string | null }> {
    const [r] = await this.db.sql<{ n: string; last: number | null; size: string | null }>(
      'select count(*) as n, max(sequence) as last, sum(pg_column_size(turns.*)) as size from turns where session_id = ?',
      [sessionId],
    );
    return r;
  }

  /** Up to `limit` turns of a session with after < sequence <= last, in order, as an archive holds them. */
  archivePage(sessionId: string, after: number, last: number, limit: number): Promise<{ sequence: number }[]> {
    return this.db.sql(
      `select id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, content, model, usage, duration_ms, started_at, context_window, memory_refs,
              parent_fork_tool_call_id, extra, branch_id from turns where session_id = ? and sequence > ? and sequence <= ? order by sequence limit ?`,
      [sessionId, after, last, limit],
    );
  }

  /** Inserts `count` imported turns in one statement of the caller's transaction `q`; `values` in ARCHIVE_COLUMNS' order. */
  async insertArchived(q: Sql, count: number, values: unknown[]): Promise<void> {
    await q(`insert into turns (${ARCHIVE_COLUMNS}) values ${new Array(count).fill(ARCHIVE_VALUES).join(', ')}`, values);
  }

  /** Whether the session has the payload (an entry id, a turn id or a tool call id), in the caller's transaction `q`. */
  async hasPayload(q: Sql, sessionId: string, kind: 'entry' | 'turn' | 'tc', payloadId: string): Promise<boolean> {
    const where = kind === 'entry' ? 'id = ?' : kind === 'turn' ? 'turn_id = ?' : 'tool_calls @> ?::jsonb';
    const rows = await q(`select 1 from turns where session_id = ? and ${where} limit 1`, [sessionId, kind === 'tc' ? JSON.stringify([{ id: payloadId }]) : payloadId]);
    return rows.length > 0;
  }

  /** Tokens of every turn of these sessions (every branch, sub-agents included). */
  async usageOf(sessionIds: string[]): Promise<Map<string, { input: number; output: number }>> {
    if (!sessionIds.length) return new Map();
    const rows = await this.db.sql<{ session_id: string; input: string; output: string }>(
      `select session_id, coalesce(sum((usage->>'input_tokens')::bigint), 0) as input, coalesce(sum((usage->>'output_tokens')::bigint), 0) as output
       from turns where session_id = any(?::text[]) group by session_id`,
      [sessionIds],
    );
    return new Map(rows.map((r) => [r.session_id, { input: Number(r.input), output: Number(r.output) }]));
  }

  /** Where a turn lives: its branch and sequence. */
  async place(sessionId: string, turnId: string): Promise<{ branch_id: string; sequence: number } | null> {
    return (await this.db.sql<{ branch_id: string; sequence: number }>('select branch_id, sequence from turns where session_id = ? and turn_id = ?', [sessionId, turnId]))[0] ?? null;
  }

  async count(sessionId: string): Promise<number> {
    const [r] = await this.db.sql<{ n: number }>('select count(*)::int as n from turns where session_id = ?', [sessionId]);
    return r.n;
  }

  async setMemoryRefs(turnId: string, refs: unknown): Promise<void> {
    await this.db.sql('update turns set memory_refs = ?::jsonb where id = ?', [JSON.stringify(refs), turnId]);
  }

  /** The memory_refs of the session's newest user turn of the root loop. */
  async lastUserMemoryRefs<T>(sessionId: string): Promise<T | null> {
    const [r] = await this.db.sql<{ refs: T | null }>(
      `select memory_refs as refs from turns where session_id = ? and role = 'user' and loop_id = 'root' order by sequence desc limit 1`,
      [sessionId],
    );
    return r?.refs ?? null;
  }

  /**
   * Store a new turn; settles once it is stored. Inserts of the same moment (the runs that start
   * together) go in one statement (WriteBatcher): at paced K=200 each run's assistant turn was
   * its own round trip, which costs the event loop a write and a read each.
   */
  insert(sessionId: string, turn: Turn, content: unknown = null): Promise<void> {
    const { id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, model, usage, duration_ms, started_at, context_window, memory_refs, parent_fork_tool_call_id } = turn;
    return this.inserts.add({
      id, session_id: sessionId, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, content, model, usage, duration_ms,
      started_at, context_window, memory_refs, parent_fork_tool_call_id, text: turnText(turn), extra: extraOrNull(turn),
    });
  }

  /**
   * The insert of `turn` as a part of a larger statement (a run's claim: one round trip for both),
   * taking its session, sequence, model and branch from `src`, a query of that statement with the
   * columns `id`, `next_sequence`, `turn_model` and `active_branch`; nothing when `src` is empty.
   */
  insertFrom(src: string, turn: Turn, content: unknown = null): { sql: string; params: unknown[] } {
    const { id, turn_id, loop_id, kind, role, status, blocks, tool_calls, usage, duration_ms, started_at, memory_refs, parent_fork_tool_call_id } = turn;
    return {
      // Model and context window as the claim resolved them (`src`'s turn_model and turn_window).
      sql: `insert into turns (${COLUMNS}, branch_id)
        select ?::text, s.id, s.next_sequence, ?::text, ?::text, ?::text, ?::text, ?::text, ?::jsonb, ?::jsonb, ?::jsonb, s.turn_model, ?::jsonb, ?::int, ?::timestamptz, s.turn_window,
          ?::jsonb, ?::text, ?::text, ?::jsonb, s.active_branch from ${src} s`,
      params: [id, turn_id, loop_id, kind, role, status, storableJson(blocks), storableJson(tool_calls), storableJson(content), JSON.stringify(usage), duration_ms, started_at, storableJson(memory_refs), parent_fork_tool_call_id, storableText(turnText(turn)), extraOrNull(turn)],
    };
  }

  /**
   * Store a turn's final state; settles once it is stored. Updates of the same moment (the runs
   * that end together) go in one statement, as inserts do. The turn's insert has settled before.
   */
  update(turn: Turn): Promise<void> {
    const { id, status, blocks, tool_calls, usage, duration_ms, model, context_window } = turn;
    return this.updates.add({ id, status, blocks, tool_calls, usage, duration_ms, model, context_window, text: turnText(turn), extra: extraOrNull(turn) });
  }

  /**
   * Turns left `streaming` in sessions no run holds: a failed run whose closing write never reached
   * the disk before its process stopped (a full disk, then a restart). At most `limit`, oldest first.
   */
  async stranded(limit = 500): Promise<{ session_id: string; turn: Turn }[]> {
    const rows = await this.db.sql<TurnRow & { session_id: string }>(
      `select ${onTurnsOfT(READ_COLUMNS)} from turns t join sessions s on s.id = t.session_id
       where t.status = 'streaming' and s.status <> 'running' order by t.session_id, t.sequence limit ?`,
      [limit],
    );
    return rows.map((r) => ({ session_id: r.session_id, turn: fromRow(r).turn }));
  }

  /**
   * The session of a payload of the user: an entry (`entry_`), a turn (`turn_`) or a tool call
   * (`tc_`) id of one of their sessions. Anything else, or someone else's, is null.
   */
  async sessionOfPayload(userId: string, payloadId: string): Promise<string | null> {
    const where = payloadId.startsWith('entry_')
      ? 't.id = ?'
      : payloadId.startsWith('turn_')
        ? 't.turn_id = ?'
        : payloadId.startsWith('tc_')
          ? `t.tool_calls @> jsonb_build_array(jsonb_build_object('id', ?::text))`
          : null;
    if (!where) return null;
    const rows = await this.db.sql<{ session_id: string }>(`select t.session_id from turns t join sessions s on s.id = t.session_id where s.user_id = ? and ${where} limit 1`, [userId, payloadId]);
    return rows[0]?.session_id ?? null;
  }

  /** Every turn of a session, on every branch, in order. */
  async all(sessionId: string): Promise<StoredTurn[]> {
    const rows = await this.db.sql<TurnRow>(`select ${READ_COLUMNS} from turns where session_id = ? order by sequence`, [sessionId]);
    return rows.map(fromRow);
  }

  /** The turns of a branch (default: the session's active one): its ancestors' up to each fork, then its own; one round trip. */
  async list(sessionId: string, branchId?: string): Promise<StoredTurn[]> {
    return withDeprecated(await this.db.sql<BranchRow>(onBranch('', false), onBranchParams(sessionId, branchId ?? null)));
  }

  /**
   * What the model's history of one loop is built from (./history.ts `toModelMessages`), on the
   * active branch: after a compaction, its first user turn, its compaction entries and the turns
   * from the newest summary's cut on, not the turns the summary stands for. A long session's run
   * then reads and holds a bounded history, whatever the session's length. One round trip; when
   * branches or deprecation make the statement's cut or first turn wrong (a rewound compaction, a
   * deprecated first message), the whole loop is read instead.
   */
  async modelTurns(sessionId: string, loopId = 'root'): Promise<StoredTurn[]> {
    type Row = BranchRow & { model_cut: number; model_first: number | null };
    const where = `and t.loop_id = ? and (t.kind = 'compaction' or t.sequence >= ${MODEL_CUT} or t.sequence = ${MODEL_FIRST})`;
    const columns = `${onTurnsOfT(READ_COLUMNS)}, (select deprecated from dep) as branch_deprecated, ${MODEL_CUT} as model_cut, ${MODEL_FIRST} as model_first`;
    const loop = [sessionId, loopId];
    const branch = onBranchParams(sessionId, null);
    // onBranch's parameters, with the select list's and the where clause's in their places.
    const params = [...branch.slice(0, -1), ...loop, ...loop, sessionId, loopId, ...loop, ...loop];
    const rows = await this.db.sql<Row>(onBranch(where, false, columns), params);
    const stored = withDeprecated(rows);
    const cut = rows[0]?.model_cut ?? -1;
    if (cut < 0 || this.boundedReadHolds(stored, loopId, cut, rows[0].model_first)) return stored;
    return (await this.list(sessionId)).filter((s) => s.turn.loop_id === loopId);
  }

  /**
   * Whether a bounded read (`modelTurns`) holds what the whole loop would give toModelMessages:
   * the newest compaction that counts on this branch cuts no earlier than the statement's cut, and
   * the loop's first user turn, on this branch and not deprecated, was read.
   */
  private boundedReadHolds(stored: StoredTurn[], loopId: string, cut: number, first: number | null): boolean {
    const compaction = lastCompaction(stored, loopId);
    if (!compaction || Number(compaction.archived_until ?? compaction.sequence) < cut) return false;
    if (first === null || first >= cut) return true;
    return stored.some((s) => s.turn.sequence === first && s.turn.role === 'user' && !s.turn.deprecated);
  }

  /** The session's active branch now (null when it has none): pins a paged read to one branch. */
  async activeBranch(sessionId: string): Promise<string | null> {
    const [r] = await this.db.sql<{ b: string | null }>('select active_branch as b from sessions where id = ?', [sessionId]);
    return r?.b ?? null;
  }

  /**
   * A page of a branch's turns as `list` answers them (same fields, `deprecated` set): those after
   * `afterSequence`, at most `limit`, in order (keyset on the (session_id, sequence) index). A reader
   * of a long session holds one page at a time (docs/sharing-and-portability.md: a share streams).
   */
  async page(sessionId: string, branchId: string | null, afterSequence: number, limit: number): Promise<StoredTurn[]> {
    return withDeprecated(await this.db.sql<BranchRow>(onBranch('and t.sequence > ?', true), [...onBranchParams(sessionId, branchId), afterSequence, limit]));
  }

  /**
   * What a reader needs before a paged read that nests sub-agent turns under their call: how many
   * turns the branch has and its last sequence (-1 when empty), and for each tool call that started
   * turns on it, the sequence of the last of them.
   */
  async forkIndex(sessionId: string, branchId: string | null): Promise<{ count: number; last: number; lastChild: Map<string, number> }> {
    const rows = await this.db.sql<{ call: string | null; n: number; last: number }>(
      `with b as (${onBranch('', false, 't.sequence, t.parent_fork_tool_call_id')})
       select null as call, count(*)::int as n, coalesce(max(sequence), -1)::int as last from b
       union all select parent_fork_tool_call_id, 0, max(sequence)::int from b where parent_fork_tool_call_id is not null group by parent_fork_tool_call_id`,
      onBranchParams(sessionId, branchId),
    );
    const all = rows.find((r) => r.call === null);
    return { count: all?.n ?? 0, last: all?.last ?? -1, lastChild: new Map(rows.filter((r) => r.call !== null).map((r) => [r.call as string, r.last])) };
  }
}

type BranchRow = TurnRow & { branch_deprecated: string[] | null };

/**
 * The turns of a branch (null: the session's active one), narrowed by `where`, in order: the
 * branch's ancestors' turns up to each fork, then its own, with the branch's deprecated ids.
 */
function onBranch(where: string, limit: boolean, columns = `${onTurnsOfT(READ_COLUMNS)}, (select deprecated from dep) as branch_deprecated`): string {
  return `with recursive chain as (
         select b.id, b.parent_id, b.fork_sequence, 2147483647 as upto
         from (select coalesce(?, active_branch) as id from sessions where id = ?) a
         left join session_branches b0 on b0.session_id = ? and b0.id = a.id
         cross join lateral (select a.id, b0.parent_id, b0.fork_sequence) b
         union all
         select c.parent_id, p.parent_id, p.fork_sequence, c.fork_sequence
         from chain c left join session_branches p on p.session_id = ? and p.id = c.parent_id
         where c.parent_id is not null
       ),
       dep as (select b.deprecated from sessions s join session_branches b on b.session_id = s.id and b.id = coalesce(?, s.active_branch) where s.id = ?)
       select ${columns}
       from turns t join chain c on t.branch_id = c.id and t.sequence < c.upto
       where t.session_id = ? ${where} order by t.sequence${limit ? ' limit ?' : ''}`;
}

const onBranchParams = (sessionId: string, branchId: string | null) => [branchId, sessionId, sessionId, sessionId, branchId, sessionId, sessionId];

function withDeprecated(rows: BranchRow[]): StoredTurn[] {
  const deprecated = new Set(rows[0]?.branch_deprecated ?? []);
  return rows.map((r) => {
    const s = fromRow(r);
    if (deprecated.has(s.turn.id) || deprecated.has(s.turn.turn_id)) s.turn.deprecated = true;
    return s;
  });
}
