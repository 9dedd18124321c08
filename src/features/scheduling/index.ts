import type { Database } from '../../platform/db/index.js';
import { BullJobs } from '../../platform/infra/jobs-bullmq.js';
import { DatabaseJobs } from '../../platform/infra/jobs-db.js';
import type { JobsPort } from '../../platform/infra/jobs.js';
import { BullDelayedJobs } from '../../platform/infra/delayed-bullmq.js';
import { DatabaseDelayedJobs } from '../../platform/infra/delayed-db.js';
import type { DelayedJobs } from '../../platform/infra/delayed.js';
import { CronClock } from '../../platform/lib/cron.js';
import type { Logger } from '../../platform/lib/logger.js';
import { type LauncherDeps, ScheduledTaskLauncher } from './launcher.js';
import { scheduledTaskRoutes } from './routes.js';
import { SchedulingService } from './service.js';
import { ScheduledTaskStore } from './store.js';

export interface SchedulingDeps extends Omit<LauncherDeps, 'store'> {
  db: Database;
  logger: Logger;
  models: string[];
  /** BullMQ on this Redis; without it the database-backed scheduler. */
  redisUrl?: string;
  /** Poll interval of the database-backed scheduler (ms). */
  pollMs?: number;
}

export type Scheduling = Awaited<ReturnType<typeof createScheduling>>;

/** Scheduled tasks, wired: routes for the app, start once the service listens, close on shutdown. */
export async function createScheduling(d: SchedulingDeps) {
  const store = new ScheduledTaskStore(d.db);
  const prefix = `agentsvc:${await store.installationId()}`;
  // One clock for the calendar, shared by the jobs adapter and the task records' next_run_at.
  const clock = new CronClock();
  const jobs: JobsPort = d.redisUrl ? new BullJobs(d.redisUrl, d.logger, prefix, clock) : new DatabaseJobs(d.db, d.logger, d.pollMs, clock);
  // One-off jobs at a time on the same queue (approval timeouts, webhook deliveries).
  const delayed: DelayedJobs = d.redisUrl ? new BullDelayedJobs(d.redisUrl, d.logger, prefix) : new DatabaseDelayedJobs(d.db, d.logger, d.pollMs);
  const launcher = new ScheduledTaskLauncher({ ...d, store });
  const scheduling = new SchedulingService({ store, jobs, launcher, logger: d.logger, models: d.models, clock });
  let expiry: NodeJS.Timeout | null = null;
  let active = 0;
  return {
    jobs,
    /** Test seam: the calendar's clock (CronClock); production never shifts it. */
    clock,
    delayed,
    /** Jobs waiting (due, install-wide) and active (handled by this node now), for the metrics. */
    async jobCounts() {
      return { waiting: await jobs.waiting(), active };
    },
    scheduling,
    launcher,
    routes: { plugin: scheduledTaskRoutes, opts: { scheduling } },
    async start() {
      launcher.start();
      await scheduling.syncSchedules();
      await jobs.start(async (id, at) => {
        active++;
        try {
          await launcher.fire(id, at);
        } finally {
          active--;
        }
      });
      await delayed.start();
      jobs.onLost?.(() => void scheduling.syncSchedules().catch(() => {}));
      expiry = setInterval(() => void scheduling.expire(), 30_000);
      expiry.unref();
    },
    async close() {
      if (expiry) clearInterval(expiry);
      launcher.close();
      await Promise.all([jobs.close(), delayed.close()]);
    },
  };
}
