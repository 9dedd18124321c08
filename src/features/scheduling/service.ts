import type { JobsPort } from '../../platform/infra/jobs.js';
import { CronClock, cronProblem, knownTimeZone } from '../../platform/lib/cron.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { Errors } from '../../platform/server/errors.js';
import type { ScheduledTaskLauncher } from './launcher.js';
import type { CreateScheduledTaskBody, PatchScheduledTaskBody, RunRecord, ScheduledTask } from './schemas.js';
import type { ScheduledTaskFields, ScheduledTaskRow, ScheduledTaskStore } from './store.js';

export interface SchedulingOptions {
  store: ScheduledTaskStore;
  jobs: JobsPort;
  launcher: ScheduledTaskLauncher;
  logger: Logger;
  /** Models a task may name (the configured ones). */
  models: string[];
  /** Default `timezone`: the system's. */
  defaultTimeZone?: string;
  /** The calendar's clock, the jobs adapter's (CronClock): the real one but in tests. */
  clock?: CronClock;
}

/** At most this many occurrences per task in a calendar (docs/scale-out.md). */
const MAX_OCCURRENCES = 1000;
const DAY_MS = 86_400_000;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** Scheduled tasks: validation, records, the calendar, and keeping the jobs port in step. */
export class SchedulingService {
  private readonly tz: string;
  private readonly clock: CronClock;

  constructor(private readonly o: SchedulingOptions) {
    this.tz = o.defaultTimeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC';
    this.clock = o.clock ?? new CronClock();
  }

  /** Every rule a task's fields must meet together; a 422 naming the first field that does not. */
  private check(f: ScheduledTaskFields) {
    if (!knownTimeZone(f.timezone)) throw Errors.invalid(['body', 'timezone'], `unknown IANA time zone ${JSON.stringify(f.timezone)}`);
    const bad = cronProblem(f.cron);
    if (bad) throw Errors.invalid(['body', 'cron'], `not a cron expression: ${bad}`);
    if (f.model != null && !this.o.models.includes(f.model)) {
      throw Errors.invalid(['body', 'model'], `unknown model ${JSON.stringify(f.model)}; configured models: ${this.o.models.join(', ')}`);
    }
  }

  private expiresAt(v: string | null | undefined): Date | null | undefined {
    if (v == null) return v;
    const d = new Date(v);
    if (d.getTime() <= Date.now()) throw Errors.invalid(['body', 'expires_at'], 'must be in the future');
    return d;
  }

  private nextRun(r: ScheduledTaskRow): Date | null {
    if (!r.enabled) return null;
    const next = this.clock.next(r.cron, r.timezone, new Date());
    return r.expires_at && next.getTime() > new Date(r.expires_at).getTime() ? null : next;
  }

  private pub(r: ScheduledTaskRow, last: RunRecord | null): ScheduledTask {
    return {
      id: r.id,
      title: r.title,
      prompt: r.prompt,
      cron: r.cron,
      timezone: r.timezone,
      enabled: r.enabled,
      expires_at: iso(r.expires_at),
      skip_confirmations: r.skip_confirmations,
      model: r.model,
      created_at: iso(r.created_at)!,
      updated_at: iso(r.updated_at)!,
      next_run_at: iso(this.nextRun(r)),
      last_run: last,
    };
  }

  private async one(r: ScheduledTaskRow): Promise<ScheduledTask> {
    return this.pub(r, (await this.o.store.lastRuns([r.id])).get(r.id) ?? null);
  }

  /** The jobs port follows the record: an enabled task has a schedule, any other has none. */
  private async follow(r: ScheduledTaskRow) {
    if (r.enabled) await this.o.jobs.upsert({ id: r.id, cron: r.cron, tz: r.timezone });
    else await this.o.jobs.remove(r.id);
  }

  private async owned(userId: string, id: string): Promise<ScheduledTaskRow> {
    const r = await this.o.store.get(userId, id);
    if (!r) throw Errors.notFound('scheduled task');
    return r;
  }

  async create(userId: string, b: CreateScheduledTaskBody): Promise<ScheduledTask> {
    const f: ScheduledTaskFields = {
      title: b.title,
      prompt: b.prompt,
      cron: b.cron.trim(),
      timezone: b.timezone ?? this.tz,
      enabled: b.enabled,
      expires_at: this.expiresAt(b.expires_at) ?? null,
      skip_confirmations: b.skip_confirmations,
      model: b.model ?? null,
    };
    this.check(f);
    const r = await this.o.store.insert(userId, f);
    await this.follow(r);
    return this.pub(r, null);
  }

  async list(userId: string): Promise<ScheduledTask[]> {
    const rows = await this.o.store.list(userId);
    const last = await this.o.store.lastRuns(rows.map((r) => r.id));
    return rows.map((r) => this.pub(r, last.get(r.id) ?? null));
  }

  async get(userId: string, id: string): Promise<ScheduledTask> {
    return this.one(await this.owned(userId, id));
  }

  async update(userId: string, id: string, b: PatchScheduledTaskBody): Promise<ScheduledTask> {
    const cur = await this.owned(userId, id);
    const patch: Partial<ScheduledTaskFields> = { ...b, cron: b.cron?.trim(), expires_at: this.expiresAt(b.expires_at) };
    if (b.timezone === undefined) delete patch.timezone;
    this.check({ ...cur, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) } as ScheduledTaskFields);
    // Re-enabling a task whose expires_at has passed: it stays disabled until expires_at moves.
    if (patch.enabled && patch.expires_at === undefined && cur.expires_at && new Date(cur.expires_at).getTime() <= Date.now()) {
      throw Errors.invalid(['body', 'enabled'], 'the task expired; set a future expires_at (or null) to enable it');
    }
    const r = await this.o.store.update(userId, id, patch);
    if (!r) throw Errors.notFound('scheduled task');
    await this.follow(r);
    return this.one(r);
  }

  setEnabled(userId: string, id: string, enabled: boolean): Promise<ScheduledTask> {
    return this.update(userId, id, { enabled });
  }

  async delete(userId: string, id: string): Promise<void> {
    if (!(await this.o.store.delete(userId, id))) throw Errors.notFound('scheduled task');
    await this.o.jobs.remove(id);
  }

  async runs(userId: string, id: string): Promise<RunRecord[]> {
    await this.owned(userId, id);
    return this.o.store.runs(id);
  }

  /** The caller's enabled tasks and their occurrences in [from, to], in each task's time zone. */
  async calendar(userId: string, fromS: string, toS: string) {
    const from = new Date(fromS);
    const to = new Date(toS);
    if (from.getTime() > to.getTime()) throw Errors.invalid(['query', 'from'], 'must not be after to');
    if (to.getTime() - from.getTime() > 366 * DAY_MS) throw Errors.invalid(['query', 'to'], 'the range must not exceed 366 days');
    return (await this.o.store.list(userId, true)).map((r) => {
      const end = r.expires_at && new Date(r.expires_at).getTime() < to.getTime() ? new Date(r.expires_at) : to;
      const at = end.getTime() < from.getTime() ? [] : this.clock.occurrences(r.cron, r.timezone, from, end, MAX_OCCURRENCES);
      return { task_id: r.id, title: r.title, occurrences: at.map((d) => d.toISOString()) };
    });
  }

  /** Disable expired tasks and drop their schedules. Never throws. */
  async expire(): Promise<void> {
    try {
      for (const { id } of await this.o.store.expire()) await this.o.jobs.remove(id);
    } catch (e) {
      this.o.logger.error(errField(e), 'expiring scheduled tasks failed');
    }
  }

  /** At start: every enabled task has its schedule (e.g. after switching between the jobs adapters). */
  async syncSchedules(): Promise<void> {
    await this.expire();
    for (const r of await this.o.store.allEnabled()) await this.follow(r).catch((e) => this.o.logger.error({ ...errField(e), task_id: r.id }, 'could not schedule a task'));
  }
}
