import type { Database } from '../../platform/db/index.js';
import { newId } from '../../platform/lib/ids.js';
import type { RunRecord } from './schemas.js';

export interface ScheduledTaskRow {
  id: string;
  user_id: string;
  title: string;
  prompt: string;
  cron: string;
  timezone: string;
  enabled: boolean;
  expires_at: Date | null;
  skip_confirmations: boolean;
  model: string | null;
  created_at: Date;
  updated_at: Date;
}

interface RunRow {
  id: string;
  task_id: string;
  session_id: string | null;
  status: RunRecord['status'];
  error: string | null;
  triggered_at: Date;
  finished_at: Date | null;
}

/** An open run and what decides how it goes on. */
export interface OpenRun {
  id: string;
  session_id: string | null;
  user_id: string;
  skip_confirmations: boolean;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
export const runRecord = (r: RunRow): RunRecord => ({ ...r, triggered_at: iso(r.triggered_at)!, finished_at: iso(r.finished_at) });

const COLUMNS = ['title', 'prompt', 'cron', 'timezone', 'enabled', 'expires_at', 'skip_confirmations', 'model'] as const;
export type ScheduledTaskFields = Pick<ScheduledTaskRow, (typeof COLUMNS)[number]>;

/** All the SQL of scheduled tasks and their runs. */
export class ScheduledTaskStore {
  constructor(private readonly db: Database) {}

  async installationId(): Promise<string> {
    return (await this.db.sql<{ id: string }>('select id from installation limit 1'))[0].id;
  }

  async insert(userId: string, f: ScheduledTaskFields): Promise<ScheduledTaskRow> {
    const [r] = await this.db.sql<ScheduledTaskRow>(
      `insert into scheduled_tasks (id, user_id, ${COLUMNS.join(', ')}) values (?, ?, ${COLUMNS.map(() => '?').join(', ')}) returning *`,
      [newId('task'), userId, ...COLUMNS.map((c) => f[c])],
    );
    return r;
  }

  async get(userId: string, id: string): Promise<ScheduledTaskRow | null> {
    return (await this.db.sql<ScheduledTaskRow>('select * from scheduled_tasks where id = ? and user_id = ?', [id, userId]))[0] ?? null;
  }

  async byId(id: string): Promise<ScheduledTaskRow | null> {
    return (await this.db.sql<ScheduledTaskRow>('select * from scheduled_tasks where id = ?', [id]))[0] ?? null;
  }

  list(userId: string, onlyEnabled = false): Promise<ScheduledTaskRow[]> {
    return this.db.sql<ScheduledTaskRow>(`select * from scheduled_tasks where user_id = ? ${onlyEnabled ? 'and enabled' : ''} order by created_at, id`, [userId]);
  }

  allEnabled(): Promise<ScheduledTaskRow[]> {
    return this.db.sql<ScheduledTaskRow>('select * from scheduled_tasks where enabled');
  }

  async update(userId: string, id: string, f: Partial<ScheduledTaskFields>): Promise<ScheduledTaskRow | null> {
    const set = COLUMNS.filter((c) => f[c] !== undefined);
    const [r] = await this.db.sql<ScheduledTaskRow>(
      `update scheduled_tasks set ${[...set.map((c) => `${c} = ?`), 'updated_at = now()'].join(', ')} where id = ? and user_id = ? returning *`,
      [...set.map((c) => f[c]), id, userId],
    );
    return r ?? null;
  }

  async delete(userId: string, id: string): Promise<boolean> {
    return (await this.db.sql('delete from scheduled_tasks where id = ? and user_id = ? returning id', [id, userId])).length > 0;
  }

  /** Enabled tasks past their expires_at, now disabled (any user). */
  expire(): Promise<{ id: string }[]> {
    return this.db.sql(`update scheduled_tasks set enabled = false, updated_at = now() where enabled and expires_at is not null and expires_at <= now() returning id`);
  }

  /** The run of (task, scheduled time), or null when it exists already (it ran, here or on another node). */
  async claimRun(taskId: string, at: Date): Promise<string | null> {
    const r = await this.db.sql<{ id: string }>(
      `insert into scheduled_task_runs (id, task_id, scheduled_for, status) values (?, ?, ?, 'running')
       on conflict (task_id, scheduled_for) do nothing returning id`,
      [newId('trun'), taskId, at],
    );
    return r[0]?.id ?? null;
  }

  async setRunSession(runId: string, sessionId: string): Promise<void> {
    await this.db.sql('update scheduled_task_runs set session_id = ? where id = ?', [sessionId, runId]);
  }

  /** running -> completed/failed, once (whichever node sees the end first). */
  async finishRun(runId: string, status: 'completed' | 'failed', error: string | null): Promise<boolean> {
    const r = await this.db.sql(`update scheduled_task_runs set status = ?, error = ?, finished_at = now() where id = ? and status = 'running' returning id`, [status, error, runId]);
    return r.length > 0;
  }

  async runs(taskId: string): Promise<RunRecord[]> {
    return (await this.db.sql<RunRow>('select * from scheduled_task_runs where task_id = ? order by triggered_at desc, id desc limit 1000', [taskId])).map(runRecord);
  }

  /** The last run of each of these tasks. */
  async lastRuns(taskIds: string[]): Promise<Map<string, RunRecord>> {
    if (!taskIds.length) return new Map();
    const rows = await this.db.sql<RunRow>(
      `select distinct on (task_id) * from scheduled_task_runs where task_id in (${taskIds.map(() => '?').join(', ')}) order by task_id, triggered_at desc, id desc`,
      taskIds,
    );
    return new Map(rows.map((r) => [r.task_id, runRecord(r)]));
  }

  /** Runs still open after `olderThanS` seconds (for the sweep). */
  openRuns(olderThanS: number): Promise<OpenRun[]> {
    return this.db.sql<OpenRun>(
      `select r.id, r.session_id, t.user_id, t.skip_confirmations
       from scheduled_task_runs r join scheduled_tasks t on t.id = r.task_id
       where r.status = 'running' and r.triggered_at < now() - make_interval(secs => ?)`,
      [olderThanS],
    );
  }

  /** The open run of a session, if a scheduled task started it. */
  async runOfSession(sessionId: string): Promise<OpenRun | null> {
    const r = await this.db.sql<OpenRun>(
      `select r.id, r.session_id, t.user_id, t.skip_confirmations
       from scheduled_task_runs r join scheduled_tasks t on t.id = r.task_id where r.session_id = ? and r.status = 'running'`,
      [sessionId],
    );
    return r[0] ?? null;
  }
}
