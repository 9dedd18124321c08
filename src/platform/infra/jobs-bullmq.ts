import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { CronClock } from '../lib/cron.js';
import { errField, type Logger } from '../lib/logger.js';
import type { JobHandler, JobSchedule, JobsPort } from './jobs.js';

const QUEUE = 'agentsvc-scheduled';

/** Occurrences from our cron evaluator (src/platform/lib/cron.ts), so both adapters agree on every time, DST included. */
const settingsOf = (clock: CronClock) => ({
  repeatStrategy: (millis: number, opts: { pattern?: string; tz?: string }) =>
    opts.pattern ? clock.next(opts.pattern, opts.tz ?? 'UTC', new Date(millis)).getTime() : undefined,
});

/**
 * BullMQ job schedulers on Redis: one scheduler per schedule id (`pattern` + `tz`), one job per
 * occurrence (BullMQ keys it by scheduler and time, so nodes upserting the same schedule do not
 * duplicate it), and a Worker on every node: each job is taken by one node.
 */
export class BullJobs implements JobsPort {
  readonly kind = 'bullmq' as const;
  private queue: Queue;
  private worker: Worker | null = null;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    /** Redis key prefix of this install's queue (installs may share one Redis). */
    private readonly prefix: string,
    /** The calendar's clock: the real one but in tests (CronClock). */
    private readonly clock = new CronClock(),
  ) {
    this.queue = new Queue(QUEUE, { connection: this.connection(), prefix, settings: settingsOf(clock), defaultJobOptions: { removeOnComplete: 1000, removeOnFail: 1000 } });
    this.queue.on('error', (e) => this.logger.warn(errField(e), 'scheduled jobs queue: redis error'));
  }

  private connection(): ConnectionOptions {
    return { url: this.url, maxRetriesPerRequest: null } as ConnectionOptions;
  }

  async upsert(s: JobSchedule): Promise<void> {
    await this.queue.upsertJobScheduler(s.id, { pattern: s.cron, tz: s.tz }, { name: 'occurrence', data: { id: s.id } });
  }

  async remove(id: string): Promise<void> {
    await this.queue.removeJobScheduler(id);
  }

  waiting(): Promise<number> {
    return this.queue.getWaitingCount();
  }

  async start(handler: JobHandler): Promise<void> {
    this.worker = new Worker(
      QUEUE,
      async (job: Job<{ id: string }>) => {
        // The occurrence's scheduled time: BullMQ keeps it as prevMillis on the scheduler's job.
        const at = new Date((job.opts as { prevMillis?: number }).prevMillis ?? job.timestamp + (job.opts.delay ?? 0));
        await handler(job.data.id, at);
      },
      { connection: this.connection(), prefix: this.prefix, concurrency: 4, settings: settingsOf(this.clock) },
    );
    this.worker.on('error', (e) => this.logger.warn(errField(e), 'scheduled jobs worker: redis error'));
    this.worker.on('failed', (job, e) => this.logger.error({ ...errField(e), job: job?.data.id }, 'a scheduled job failed'));
  }

  /** Each reconnection after the first: a Redis restarted without persistence has lost the schedulers. */
  onLost(fn: () => void) {
    void this.queue.client.then((c) => {
      c.on('ready', fn);
    });
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.worker?.close(), this.queue.close()]);
  }
}
