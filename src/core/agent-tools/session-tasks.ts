import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database, Sql } from '../../platform/db/index.js';
import { me } from '../../platform/server/auth.js';
import type { SessionService } from '../sessions/service.js';
import { SessionParams } from '../sessions/schemas.js';
import { defineTool } from '../tools/define.js';
import { ToolError, type Tool } from '../tools/types.js';

export interface SessionTask {
  id: string;
  subject: string;
  description: string;
  status: 'pending' | 'in_progress' | 'completed';
  loop_id: string;
  created_at: string;
  updated_at: string;
}

interface Row {
  id: number;
  subject: string;
  description: string;
  status: SessionTask['status'];
  loop_id: string;
  created_at: Date;
  updated_at: Date;
}

const pub = (r: Row): SessionTask => ({ ...r, id: String(r.id), created_at: new Date(r.created_at).toISOString(), updated_at: new Date(r.updated_at).toISOString() });

/** The per-session task list the model keeps (TaskCreate / TaskUpdate / TaskList). */
export class SessionTaskStore {
  constructor(private readonly db: Database) {}

  /** A session's tasks, as an archive holds them. */
  archived(sessionId: string): Promise<Record<string, unknown>[]> {
    return this.db.sql('select id, subject, description, status, loop_id, created_at, updated_at from session_tasks where session_id = ? order by id', [sessionId]);
  }

  /** An imported task, in the caller's transaction `q`. */
  async insertArchived(q: Sql, t: { session_id: string; id: number; subject: string; description: string; status: string; loop_id: string }): Promise<void> {
    await q('insert into session_tasks (session_id, id, subject, description, status, loop_id) values (?, ?, ?, ?, ?, ?)', [t.session_id, t.id, t.subject, t.description, t.status, t.loop_id]);
  }

  async create(sessionId: string, loopId: string, subject: string, description: string): Promise<SessionTask> {
    const [r] = await this.db.sql<Row>(
      `insert into session_tasks (session_id, id, subject, description, loop_id)
       values (?, (select coalesce(max(id), 0) + 1 from session_tasks where session_id = ?), ?, ?, ?) returning *`,
      [sessionId, sessionId, subject, description, loopId],
    );
    return pub(r);
  }

  async update(sessionId: string, id: string, patch: { status?: string; subject?: string; description?: string }): Promise<SessionTask | null> {
    if (patch.status === 'deleted') {
      const r = await this.db.sql<Row>('delete from session_tasks where session_id = ? and id = ? returning *', [sessionId, Number(id)]);
      return r[0] ? { ...pub(r[0]), status: 'deleted' as never } : null;
    }
    const [r] = await this.db.sql<Row>(
      `update session_tasks set status = coalesce(?, status), subject = coalesce(?, subject), description = coalesce(?, description), updated_at = now()
       where session_id = ? and id = ? returning *`,
      [patch.status ?? null, patch.subject ?? null, patch.description ?? null, sessionId, Number(id)],
    );
    return r ? pub(r) : null;
  }

  async list(sessionId: string): Promise<SessionTask[]> {
    return (await this.db.sql<Row>('select * from session_tasks where session_id = ? order by id', [sessionId])).map(pub);
  }
}

const listing = (tasks: SessionTask[]) => (tasks.length ? tasks.map((t) => `#${t.id} [${t.status}] ${t.subject}`).join('\n') : 'No tasks');

export function createSessionTaskTools(store: SessionTaskStore): Tool[] {
  const create = defineTool({
    name: 'TaskCreate',
    description: 'Add a task to the session task list (for multi-step work; the user sees the list). Mark tasks in_progress and completed with TaskUpdate as you go.',
    provider: 'builtin',
    input: z.object({ subject: z.string().min(1).max(200), description: z.string().max(5000) }).strict(),
    async execute({ subject, description }, ctx) {
      const t = await store.create(ctx.sessionId, ctx.loopId, subject, description);
      return `Created task #${t.id}: ${t.subject}`;
    },
  });
  const update = defineTool({
    name: 'TaskUpdate',
    description: 'Update a task of the session task list: status pending | in_progress | completed | deleted, or its subject/description.',
    provider: 'builtin',
    input: z
      .object({
        taskId: z.string().regex(/^[0-9]+$/),
        status: z.enum(['pending', 'in_progress', 'completed', 'deleted']).optional(),
        subject: z.string().min(1).max(200).optional(),
        description: z.string().max(5000).optional(),
      })
      .strict(),
    async execute({ taskId, ...patch }, ctx) {
      const t = await store.update(ctx.sessionId, taskId, patch);
      if (!t) throw new ToolError(`no task #${taskId}; TaskList shows the existing ones`);
      return `Task #${t.id} is now [${t.status}] ${t.subject}`;
    },
  });
  const list = defineTool({
    name: 'TaskList',
    description: 'Show the session task list.',
    provider: 'builtin',
    parallel: true,
    input: z.object({}).strict(),
    async execute(_args, ctx) {
      return listing(await store.list(ctx.sessionId));
    },
  });
  return [create, update, list];
}

const Task = z.object({ id: z.string(), subject: z.string(), description: z.string(), status: z.string(), loop_id: z.string(), created_at: z.string(), updated_at: z.string() });

export const sessionTaskRoutes: FastifyPluginAsyncZod<{ sessions: SessionService; tasks: SessionTaskStore }> = async (app, { sessions, tasks }) => {
  app.get(
    '/api/sessions/:session_id/tasks',
    { schema: { tags: ['chat'], params: SessionParams, response: { 200: z.array(Task) } } },
    async (req) => {
      await sessions.getOwned(me(req).id, req.params.session_id);
      return tasks.list(req.params.session_id);
    },
  );
};
