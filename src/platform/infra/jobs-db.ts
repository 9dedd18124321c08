import type { Database } from '../db/index.js';
import { CronClock } from '../lib/cron.js';
import { errField, type Logger } from '../lib/logger.js';
import type { JobHandler, JobSchedule, JobsPort } from './jobs.js';

/** How long a claimed occurrence is this node's before another may take it (the claimer died). */
const CLAIM_SECONDS = 60;

interface Due {
  id: string;
  cron: string;
  tz: string;
  next_at: Date;
  /** next_at exactly (microseconds), for the compare-and-set. */
  next_text: string;
}

/**
 * Schedules in PostgreSQL (`job_schedules`): every node polls; a due row is claimed with
 * `FOR UPDATE SKIP LOCKED` (one node gets it, the others skip it without waiting), advanced to its
 * next occurrence, and handed to the handler. A missed stretch (every node down) fires once, late,
 * for its last due occurrence, then the schedule goes on from now.
 */
export class DatabaseJobs implements JobsPort {
  readonly kind = 'database' as const;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private handler: JobHandler | null = null;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    private readonly pollMs = 5000,
    /** The calendar's clock: the real one but in tests (CronClock). */
    private readonly clock = new CronClock(),
  ) {}

  async upsert(s: JobSchedule): Promise<void> {
    const next = this.clock.next(s.cron, s.tz, new Date());
    await this.db.sql(
      `insert into job_schedules (id, cron, tz, next_at) values (?, ?, ?, ?)
       on conflict (id) do update set cron = excluded.cron, tz = excluded.tz, next_at = excluded.next_at, claimed_until = null
       where job_schedules.cron <> excluded.cron or job_schedules.tz <> excluded.tz`,
      [s.id, s.cron, s.tz, next],
    );
  }

  async remove(id: string): Promise<void> {
    await this.db.sql('delete from job_schedules where id = ?', [id]);
  }

  async waiting(): Promise<number> {
    const [r] = await this.db.sql<{ n: number }>(
      'select count(*)::int as n from job_schedules where next_at <= now() and (claimed_until is null or claimed_until < now())',
    );
    return r?.n ?? 0;
  }

  async start(handler: JobHandler): Promise<void> {
    this.handler = handler;
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    void this.poll();
  }

  /** One pass: claim what is due, advance it, hand it over. Never throws. */
  poll(): Promise<void> {
    this.polling ??= this.pass()
      .catch((e) => this.logger.error(errField(e), 'scheduler poll failed'))
      .finally(() => (this.polling = null));
    return this.polling;
  }

  private async pass() {
    const due = await this.db.sql<Due>(
      `update job_schedules set claimed_until = now() + interval '${CLAIM_SECONDS} seconds'
       where id in (select id from job_schedules where next_at <= now() and (claimed_until is null or claimed_until < now())
                    order by next_at limit 50 for update skip locked)
       returning id, cron, tz, next_at, next_at::text as next_text`,
    );
    for (const d of due) {
      const at = new Date(d.next_at);
      let next: Date | null = null;
      try {
        next = this.clock.next(d.cron, d.tz, new Date(Math.max(Date.now(), at.getTime())));
      } catch (e) {
        this.logger.error({ ...errField(e), job: d.id }, 'a schedule has no next occurrence; removed');
      }
      const moved = next
        ? await this.db.sql('update job_schedules set next_at = ?, claimed_until = null where id = ? and next_at = ?::timestamptz returning id', [next, d.id, d.next_text])
        : await this.db.sql('delete from job_schedules where id = ? returning id', [d.id]);
      // Changed meanwhile (upsert or remove): that version decides.
      if (!moved.length || !this.handler) continue;
      await this.handler(d.id, at).catch((e) => this.logger.error({ ...errField(e), job: d.id }, 'a scheduled job failed'));
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.handler = null;
    await this.polling;
  }
}
