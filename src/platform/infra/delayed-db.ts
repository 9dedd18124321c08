import type { Database } from '../db/index.js';
import { errField, type Logger } from '../lib/logger.js';
import type { DelayedHandler, DelayedJobs } from './delayed.js';

/** How long a claimed job is this node's before another may take it (the claimer died). */
const CLAIM_SECONDS = 60;

interface Due {
  id: string;
  topic: string;
  key: string;
  data: Record<string, unknown>;
  version: number;
}

/**
 * Delayed jobs in PostgreSQL (`delayed_jobs`, one row per topic and key): every node polls; a due
 * row is claimed with `FOR UPDATE SKIP LOCKED` and a lease, handed to its handler, then deleted
 * unless it was scheduled again meanwhile (its version moved). A handler that throws leaves the
 * row to be taken again once the lease is over.
 */
export class DatabaseDelayedJobs implements DelayedJobs {
  readonly kind = 'database' as const;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private readonly handlers = new Map<string, DelayedHandler>();
  private running = false;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    private readonly pollMs = 5000,
  ) {}

  async at(topic: string, key: string, at: Date, data: Record<string, unknown> = {}): Promise<void> {
    await this.db.sql(
      `insert into delayed_jobs (id, topic, key, data, run_at) values (?, ?, ?, ?::jsonb, ?)
       on conflict (id) do update set run_at = least(delayed_jobs.run_at, excluded.run_at), data = excluded.data,
         version = delayed_jobs.version + 1, claimed_until = null`,
      [`${topic}|${key}`, topic, key, JSON.stringify(data), at],
    );
    // A job due now need not wait for the next poll.
    if (this.running && at.getTime() <= Date.now()) void this.poll();
  }

  handle(topic: string, fn: DelayedHandler): void {
    this.handlers.set(topic, fn);
  }

  async start(): Promise<void> {
    this.running = true;
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    void this.poll();
  }

  /** One pass: claim what is due, hand it over. Never throws. */
  poll(): Promise<void> {
    this.polling ??= this.pass()
      .catch((e) => this.logger.error(errField(e), 'delayed jobs poll failed'))
      .finally(() => (this.polling = null));
    return this.polling;
  }

  private async pass() {
    const topics = [...this.handlers.keys()];
    if (!topics.length) return;
    const due = await this.db.sql<Due>(
      `update delayed_jobs set claimed_until = now() + interval '${CLAIM_SECONDS} seconds'
       where id in (select id from delayed_jobs where run_at <= now() and (claimed_until is null or claimed_until < now())
                    and topic in (select jsonb_array_elements_text(?::jsonb)) order by run_at limit 50 for update skip locked)
       returning id, topic, key, data, version`,
      [JSON.stringify(topics)],
    );
    await Promise.all(
      due.map(async (d) => {
        try {
          await this.handlers.get(d.topic)?.(d.key, d.data);
          await this.db.sql('delete from delayed_jobs where id = ? and version = ?', [d.id, d.version]);
        } catch (e) {
          this.logger.error({ ...errField(e), job: d.id }, 'a delayed job failed; taken again after its lease');
        }
      }),
    );
  }

  async close(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.polling;
    this.handlers.clear();
  }
}
