import type { Database, Sql } from '../../platform/db/index.js';

export interface MemoryRow {
  id: number;
  type: 'feedback' | 'experience';
  content: string;
  skill_name: string | null;
  record_type: 'memory' | 'skill_comment' | null;
  scope: string | null;
  owner: string | null;
  topic: string | null;
  ext_memory_id: string | null;
  superseded_by: number | null;
  write_reason: string | null;
  created_at: string;
  updated_at: string | null;
  hit_count: number;
  last_hit_at: string | null;
  disabled: boolean;
  source_session: string;
}

export const FIELDS = ['type', 'content', 'skill_name', 'record_type', 'scope', 'owner', 'topic', 'ext_memory_id', 'write_reason', 'superseded_by'] as const;
export type MemoryFields = Partial<Pick<MemoryRow, (typeof FIELDS)[number]>>;

const COLS = `id, type, content, skill_name, record_type, scope, owner, topic, ext_memory_id, superseded_by, write_reason, hit_count, disabled, source_session,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
  to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at,
  to_char(last_hit_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last_hit_at`;

export interface ListFilter {
  keyword?: string;
  skill_name?: string;
  type?: string;
  record_type?: string;
  scope?: string;
  owner?: string;
  topic?: string;
  status: 'active' | 'disabled' | 'all';
  offset: number;
  limit: number;
}

/** Memories of users (docs/memories-and-settings.md): all the SQL. */
export class MemoryStore {
  constructor(private readonly db: Database) {}

  /** The memories a session wrote, as an archive holds them. */
  archived(userId: string, sessionId: string): Promise<Record<string, unknown>[]> {
    return this.db.sql(
      'select type, content, skill_name, record_type, scope, owner, topic, ext_memory_id, write_reason, created_at from memories where user_id = ? and source_session = ? order by id',
      [userId, sessionId],
    );
  }

  /** An imported memory, in the caller's transaction `q`. */
  async insertArchived(q: Sql, userId: string, sessionId: string, m: Record<'type' | 'content' | 'skill_name' | 'record_type' | 'scope' | 'owner' | 'topic' | 'ext_memory_id' | 'write_reason', unknown>): Promise<void> {
    await q('insert into memories (user_id, source_session, type, content, skill_name, record_type, scope, owner, topic, ext_memory_id, write_reason) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
      userId,
      sessionId,
      m.type,
      m.content,
      m.skill_name,
      m.record_type,
      m.scope,
      m.owner,
      m.topic,
      m.ext_memory_id,
      m.write_reason,
    ]);
  }

  async insert(userId: string, f: MemoryFields & { content: string }, sourceSession = ''): Promise<MemoryRow> {
    const set = FIELDS.filter((k) => f[k] !== undefined);
    const [r] = await this.db.sql<MemoryRow>(
      `insert into memories (user_id, source_session, ${set.join(', ')}) values (?, ?, ${set.map(() => '?').join(', ')}) returning ${COLS}`,
      [userId, sourceSession, ...set.map((k) => f[k])],
    );
    return r;
  }

  async get(userId: string, id: number): Promise<MemoryRow | null> {
    return (await this.db.sql<MemoryRow>(`select ${COLS} from memories where id = ? and user_id = ?`, [id, userId]))[0] ?? null;
  }

  async update(userId: string, id: number, f: MemoryFields & { disabled?: boolean }): Promise<MemoryRow | null> {
    const keys = [...FIELDS, 'disabled' as const].filter((k) => (f as Record<string, unknown>)[k] !== undefined);
    const [r] = await this.db.sql<MemoryRow>(
      `update memories set ${[...keys.map((k) => `${k} = ?`), 'updated_at = now()'].join(', ')} where id = ? and user_id = ? returning ${COLS}`,
      [...keys.map((k) => (f as Record<string, unknown>)[k]), id, userId],
    );
    return r ?? null;
  }

  async delete(userId: string, id: number): Promise<boolean> {
    return (await this.db.sql('delete from memories where id = ? and user_id = ? returning id', [id, userId])).length > 0;
  }

  async batch(userId: string, action: 'delete' | 'disable' | 'enable', ids: number[]): Promise<number> {
    const q =
      action === 'delete'
        ? `delete from memories where user_id = ? and id = any(?::int[]) returning id`
        : `update memories set disabled = ${action === 'disable'}, updated_at = now() where user_id = ? and id = any(?::int[]) and disabled <> ${action === 'disable'} returning id`;
    return (await this.db.sql(q, [userId, `{${ids.join(',')}}`])).length;
  }

  async list(userId: string, f: ListFilter): Promise<{ items: MemoryRow[]; total: number }> {
    const where = ['user_id = ?'];
    const params: unknown[] = [userId];
    for (const k of ['skill_name', 'type', 'record_type', 'scope', 'owner', 'topic'] as const) {
      if (f[k] !== undefined) {
        where.push(`${k} = ?`);
        params.push(f[k]);
      }
    }
    if (f.status !== 'all') where.push(f.status === 'active' ? 'not disabled' : 'disabled');
    if (f.keyword?.trim()) {
      // Words of the content (full-text), else a plain substring (short or odd keywords).
      where.push(`(tsv @@ plainto_tsquery('simple', ?) or content ilike ?)`);
      params.push(f.keyword, `%${f.keyword.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    }
    const w = where.join(' and ');
    const [{ n }] = await this.db.sql<{ n: number }>(`select count(*)::int as n from memories where ${w}`, params);
    const items = await this.db.sql<MemoryRow>(`select ${COLS} from memories where ${w} order by created_at desc, id desc offset ? limit ?`, [...params, f.offset, f.limit]);
    return { items, total: n };
  }

  /** The most relevant enabled, not superseded memories for a text (full-text rank); counted as hits. */
  async relevant(userId: string, text: string, k: number): Promise<MemoryRow[]> {
    // Any word of the text (prefix match), ranked: the memories that share the most with it first.
    const rows = await this.db.sql<MemoryRow>(
      `with words as (select to_tsquery('simple', string_agg(quote_literal(w) || ':*', ' | ')) as q
                      from unnest(tsvector_to_array(to_tsvector('simple', ?))) w)
       update memories set hit_count = hit_count + 1, last_hit_at = now()
       where id in (select m.id from memories m, words where m.user_id = ? and not m.disabled and m.superseded_by is null
                    and words.q is not null and m.tsv @@ words.q
                    order by ts_rank(m.tsv, words.q) desc, m.id desc limit ?)
       returning ${COLS}`,
      [text, userId, k],
    );
    return rows;
  }

  async byIds(userId: string, ids: number[]): Promise<MemoryRow[]> {
    if (!ids.length) return [];
    return this.db.sql<MemoryRow>(`select ${COLS} from memories where user_id = ? and id = any(?::int[]) order by id`, [userId, `{${ids.join(',')}}`]);
  }
}
