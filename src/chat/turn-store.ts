import type { Database } from '../db/index.js';
import { storableJson, storableText } from '../lib/json.js';
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

const COLUMNS =
  'id, session_id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, content, model, usage, duration_ms, started_at, context_window, memory_refs, parent_fork_tool_call_id, text, extra';

/** Turns of sessions; the in-flight state of a running turn lives in the loop until turn:end. */
export class TurnStore {
  constructor(private readonly db: Database) {}

  private conn() {
    return this.db.em().getConnection();
  }

  async nextSequence(sessionId: string): Promise<number> {
    const [r] = await this.conn().execute<{ n: number }[]>('select coalesce(max(sequence) + 1, 0)::int as n from turns where session_id = ?', [sessionId]);
    return r.n;
  }

  async insert(sessionId: string, turn: Turn, content: unknown = null): Promise<void> {
    const { id, sequence, turn_id, loop_id, kind, role, status, blocks, tool_calls, model, usage, duration_ms, started_at, context_window, memory_refs, parent_fork_tool_call_id, ...rest } = turn;
    const extra = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== null));
    await this.conn().execute(
      `insert into turns (${COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, ?, ?::jsonb, ?, ?, ?, ?::jsonb, ?, ?, ?::jsonb)`,
      [id, sessionId, sequence, turn_id, loop_id, kind, role, status, storableJson(blocks), storableJson(tool_calls), storableJson(content), model, JSON.stringify(usage), duration_ms, started_at, context_window, storableJson(memory_refs), parent_fork_tool_call_id, storableText(turnText(turn)), Object.keys(extra).length ? storableJson(extra) : null],
    );
  }

  async update(turn: Turn): Promise<void> {
    await this.conn().execute(
      'update turns set status = ?, blocks = ?::jsonb, tool_calls = ?::jsonb, usage = ?::jsonb, duration_ms = ?, text = ?, model = ? where id = ?',
      [turn.status, storableJson(turn.blocks), storableJson(turn.tool_calls), JSON.stringify(turn.usage), turn.duration_ms, storableText(turnText(turn)), turn.model, turn.id],
    );
  }

  async list(sessionId: string): Promise<StoredTurn[]> {
    const rows = await this.conn().execute<TurnRow[]>(`select ${COLUMNS} from turns where session_id = ? order by sequence`, [sessionId]);
    return rows.map(fromRow);
  }
}
