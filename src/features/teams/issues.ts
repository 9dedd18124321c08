import type { Knex } from '@mikro-orm/postgresql';
import type { Database, Sql } from '../../platform/db/index.js';
import { Errors } from '../../platform/server/errors.js';
import { type CreateIssueT, type IssueQueryT, type IssueT, type PatchIssueT, PRIORITIES, STATUSES, type TimelineEventT } from './schemas.js';
import { iso, wsId } from './store.js';

export interface Actor {
  type: 'member' | 'agent' | 'system';
  id: string | null;
}

interface IssueRow extends Omit<IssueT, 'created_at' | 'updated_at'> {
  created_at: Date;
  updated_at: Date;
}

interface EventRow {
  seq: string;
  issue_id: string;
  kind: string;
  actor_type: Actor['type'];
  actor_id: string | null;
  field: string | null;
  old_value: unknown;
  new_value: unknown;
  data: Record<string, unknown> | null;
  created_at: Date;
}

export const toIssue = (r: IssueRow): IssueT => ({
  id: r.id,
  workspace_id: r.workspace_id,
  number: r.number,
  parent_id: r.parent_id,
  title: r.title,
  description: r.description,
  priority: r.priority,
  status: r.status,
  assignee: r.assignee,
  assignee_type: r.assignee_type,
  assignee_id: r.assignee_id,
  project: r.project,
  labels: r.labels ?? [],
  created_by: r.created_by,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

const toEvent = (r: EventRow): TimelineEventT => ({
  id: String(r.seq),
  issue_id: r.issue_id,
  kind: r.kind,
  actor_type: r.actor_type,
  actor_id: r.actor_id,
  field: r.field,
  from: r.old_value ?? null,
  to: r.new_value ?? null,
  data: r.data,
  created_at: iso(r.created_at)!,
});

/** Fields whose every change is a timeline event, in this order. */
export const TRACKED = ['title', 'description', 'priority', 'status', 'assignee', 'assignee_type', 'assignee_id', 'project', 'labels', 'parent_id'] as const;
type Tracked = (typeof TRACKED)[number];
const JSONB = new Set<Tracked>(['labels']);

const j = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** All the SQL of issues and their timeline. Callers have checked membership. */
export class IssueStore {
  constructor(private readonly db: Database) {}

  async get(workspaceId: string, id: string): Promise<IssueT> {
    const [r] = await this.db.sql<IssueRow>('select * from issues where id = ? and workspace_id = ?', [id, workspaceId]);
    if (!r) throw Errors.notFound('issue');
    return toIssue(r);
  }

  async event(issueId: string, kind: string, actor: Actor, e: { field?: string; from?: unknown; to?: unknown; data?: Record<string, unknown> } = {}): Promise<void> {
    await this.db.sql('insert into issue_events (issue_id, kind, actor_type, actor_id, field, old_value, new_value, data) values (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb)', [
      issueId,
      kind,
      actor.type,
      actor.id,
      e.field ?? null,
      j(e.from),
      j(e.to),
      j(e.data),
    ]);
  }

  /** Issues per workspace, for these workspaces (absent: none). */
  async counts(workspaceIds: string[]): Promise<Map<string, number>> {
    const rows = await this.db.sql<{ workspace_id: string; n: number }>(
      `select workspace_id, count(*)::int as n from issues where workspace_id = any(?::text[]) group by workspace_id`,
      [workspaceIds],
    );
    return new Map(rows.map((r) => [r.workspace_id, r.n]));
  }

  /**
   * The next number of the workspace (`number`, the workspaces' store, run in this transaction),
   * the issue and its `created` event: one transaction.
   */
  async create(workspaceId: string, userId: string, f: CreateIssueT, number: (q: Sql, workspaceId: string) => Promise<number>): Promise<IssueT> {
    const id = wsId('iss');
    await this.db.transaction(async (q) => {
      const issue_seq = await number(q, workspaceId);
      await q(
        `insert into issues (id, workspace_id, number, parent_id, title, description, priority, status, assignee, assignee_type, assignee_id, project, labels, created_by)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?)`,
        [id, workspaceId, issue_seq, f.parent_id ?? null, f.title, f.description, f.priority, f.status, f.assignee ?? null, f.assignee_type ?? null, f.assignee_id ?? null, f.project ?? null, JSON.stringify(f.labels), userId],
      );
      await q(`insert into issue_events (issue_id, kind, actor_type, actor_id, data) values (?, 'created', 'member', ?, ?::jsonb)`, [
        id,
        userId,
        JSON.stringify({ number: issue_seq, title: f.title, status: f.status, priority: f.priority }),
      ]);
    });
    return this.get(workspaceId, id);
  }

  /**
   * Applies the fields that differ and writes one timeline event per changed field, in one
   * transaction (the row locked, so two concurrent edits are ordered, each seeing the other's result).
   */
  async update(workspaceId: string, id: string, patch: PatchIssueT, actor: Actor): Promise<{ before: IssueT; after: IssueT }> {
    let before: IssueT | null = null;
    await this.db.transaction(async (q) => {
      const [row] = await q<IssueRow>('select * from issues where id = ? and workspace_id = ? for update', [id, workspaceId]);
      if (!row) throw Errors.notFound('issue');
      before = toIssue(row);
      const changed = TRACKED.filter((k) => patch[k] !== undefined && !same(patch[k], before![k]));
      if (!changed.length) return;
      await q(`update issues set ${changed.map((k) => (JSONB.has(k) ? `${k} = ?::jsonb` : `${k} = ?`)).join(', ')}, updated_at = now() where id = ?`, [
        ...changed.map((k) => (JSONB.has(k) ? JSON.stringify(patch[k]) : patch[k])),
        id,
      ]);
      for (const k of changed) {
        await q(`insert into issue_events (issue_id, kind, actor_type, actor_id, field, old_value, new_value) values (?, 'updated', ?, ?, ?, ?::jsonb, ?::jsonb)`, [
          id,
          actor.type,
          actor.id,
          k,
          j(before![k]),
          j(patch[k]),
        ]);
      }
    });
    return { before: before!, after: await this.get(workspaceId, id) };
  }

  /** True when `ancestor` is `id` itself or above it in the parent chain (a new parent would make a cycle). */
  async isAncestorOrSelf(ancestor: string, id: string): Promise<boolean> {
    const r = await this.db.sql(
      `with recursive up(id, parent_id, depth) as (
         select id, parent_id, 0 from issues where id = ?
         union all select i.id, i.parent_id, up.depth + 1 from issues i join up on i.id = up.parent_id where up.depth < 1000)
       select 1 from up where id = ? limit 1`,
      [id, ancestor],
    );
    return r.length > 0;
  }

  /** The issues of a workspace that the filters given match (each filter optional). */
  private matching(workspaceId: string, f: Partial<IssueQueryT>): Knex.QueryBuilder {
    const q = this.db.knex('issues').where('workspace_id', workspaceId);
    if (f.status) q.whereIn('status', f.status);
    if (f.priority) q.whereIn('priority', f.priority);
    if (f.assignee_id) q.where('assignee_id', f.assignee_id);
    if (f.assignee_type) q.where('assignee_type', f.assignee_type);
    if (f.parent_id) q.where('parent_id', f.parent_id);
    if (f.label) q.whereRaw('labels @> jsonb_build_array(?::text)', [f.label]);
    if (f.q) {
      const like = `%${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const n = /^#?(\d{1,9})$/.exec(f.q.trim());
      q.where((w) => {
        w.where('title', 'ilike', like).orWhere('description', 'ilike', like);
        if (n) w.orWhere('number', Number(n[1]));
      });
    }
    return q;
  }

  async query(workspaceId: string, f: IssueQueryT): Promise<{ items: IssueT[]; total: number }> {
    const k = this.db.knex;
    const rows: (IssueRow & { total: number })[] = await this.matching(workspaceId, f).select('*', k.raw('count(*) over ()::int as total')).orderBy('number', 'desc').limit(f.limit).offset(f.offset);
    const total = rows[0]?.total ?? (f.offset > 0 ? ((await this.matching(workspaceId, f).select(k.raw('count(*)::int as n')))[0] as { n: number } | undefined)?.n ?? 0 : 0);
    return { items: rows.map(toIssue), total };
  }

  async all(workspaceId: string, limit = 1000): Promise<IssueT[]> {
    return (await this.db.sql<IssueRow>('select * from issues where workspace_id = ? order by number desc limit ?', [workspaceId, limit])).map(toIssue);
  }

  /** Each group's count and its newest `limit` issues (`key` null: unassigned). */
  async grouped(workspaceId: string, by: 'status' | 'priority' | 'assignee', limit: number) {
    const col = by === 'assignee' ? 'assignee_id' : by;
    const rows = await this.db.sql<IssueRow & { g: string | null; cnt: number }>(
      `select * from (select *, ${col} as g, row_number() over (partition by ${col} order by number desc) as rn, count(*) over (partition by ${col})::int as cnt
         from issues where workspace_id = ?) x where rn <= ? order by number desc`,
      [workspaceId, limit],
    );
    const groups = new Map<string | null, { key: string | null; count: number; items: IssueT[] }>();
    // Every status and priority has its group, empty ones too, in the order of the enums.
    if (by !== 'assignee') for (const k of by === 'status' ? STATUSES : PRIORITIES) groups.set(k, { key: k, count: 0, items: [] });
    for (const r of rows) {
      const g = groups.get(r.g) ?? { key: r.g, count: r.cnt, items: [] };
      g.count = r.cnt;
      g.items.push(toIssue(r));
      groups.set(r.g, g);
    }
    return { by, groups: [...groups.values()] };
  }

  async childProgress(workspaceId: string, parentId?: string) {
    const rows = await this.db.sql<{ parent_id: string; status: string; n: number }>(
      `select parent_id, status, count(*)::int as n from issues where workspace_id = ? and parent_id is not null ${parentId ? 'and parent_id = ?' : ''}
       group by parent_id, status order by parent_id`,
      parentId ? [workspaceId, parentId] : [workspaceId],
    );
    const out = new Map<string, { issue_id: string; total: number; done: number; by_status: Record<string, number> }>();
    if (parentId) out.set(parentId, { issue_id: parentId, total: 0, done: 0, by_status: {} });
    for (const r of rows) {
      const p = out.get(r.parent_id) ?? { issue_id: r.parent_id, total: 0, done: 0, by_status: {} };
      p.total += r.n;
      if (r.status === 'done') p.done += r.n;
      p.by_status[r.status] = r.n;
      out.set(r.parent_id, p);
    }
    return { items: [...out.values()] };
  }

  async timeline(issueId: string): Promise<TimelineEventT[]> {
    return (await this.db.sql<EventRow>('select * from issue_events where issue_id = ? order by seq limit 10000', [issueId])).map(toEvent);
  }
}
