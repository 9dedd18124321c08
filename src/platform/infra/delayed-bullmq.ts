import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { errField, type Logger } from '../lib/logger.js';
import type { DelayedHandler, DelayedJobs } from './delayed.js';

const QUEUE = 'agentsvc-delayed';

/**
 * Delayed jobs on Redis: one BullMQ job per (topic, key, time), `delay` until its time, a Worker on
 * every node (each job is taken by one). A job that throws is retried by BullMQ with backoff.
 */
export class BullDelayedJobs implements DelayedJobs {
  readonly kind = 'bullmq' as const;
  private readonly queue: Queue;
  private worker: Worker | null = null;
  private readonly handlers = new Map<string, DelayedHandler>();

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly prefix: string,
  ) {
    this.queue = new Queue(QUEUE, {
      connection: this.connection(),
      prefix,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000, attempts: 10, backoff: { type: 'exponential', delay: 5000 } },
    });
    this.queue.on('error', (e) => this.logger.warn(errField(e), 'delayed jobs queue: redis error'));
  }

  private connection(): ConnectionOptions {
    return { url: this.url, maxRetriesPerRequest: null } as ConnectionOptions;
  }

  async at(topic: string, key: string, at: Date, data: Record<string, unknown> = {}): Promise<void> {
    // BullMQ refuses ':' in custom ids; the time in the id lets a job be scheduled again while it runs.
    const jobId = `${topic}|${key}|${at.getTime()}`.replaceAll(':', '_');
    await this.queue.add(topic, { key, data }, { jobId, delay: Math.max(0, at.getTime() - Date.now()) });
  }

  handle(topic: string, fn: DelayedHandler): void {
    this.handlers.set(topic, fn);
  }

  async start(): Promise<void> {
    this.worker = new Worker(
      QUEUE,
      async (job: Job<{ key: string; data: Record<string, unknown> }>) => {
        const fn = this.handlers.get(job.name);
        if (!fn) throw new Error(`no handler for delayed jobs of topic ${job.name}`);
        await fn(job.data.key, job.data.data);
      },
      { connection: this.connection(), prefix: this.prefix, concurrency: 8 },
    );
    this.worker.on('error', (e) => this.logger.warn(errField(e), 'delayed jobs worker: redis error'));
    this.worker.on('failed', (job, e) => this.logger.error({ ...errField(e), job: job?.id }, 'a delayed job failed'));
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.worker?.close(), this.queue.close()]);
    this.handlers.clear();
  }
}
