import type { Database } from '../../platform/db/index.js';
import { BullJobs } from '../../platform/infra/jobs-bullmq.js';
import { DatabaseJobs } from '../../platform/infra/jobs-db.js';
import type { JobsPort } from '../../platform/infra/jobs.js';
import type { Logger } from '../../platform/lib/logger.js';
import { type LauncherDeps, TaskLauncher } from './launcher.js';
import { scheduledTaskRoutes } from './routes.js';
import { SchedulingService } from './service.js';
import { TaskStore } from './store.js';

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
  const store = new TaskStore(d.db);
  const jobs: JobsPort = d.redisUrl ? new BullJobs(d.redisUrl, d.logger, `agentsvc:${await store.installationId()}`) : new DatabaseJobs(d.db, d.logger, d.pollMs);
  const launcher = new TaskLauncher({ ...d, store });
  const scheduling = new SchedulingService({ store, jobs, launcher, logger: d.logger, models: d.models });
  let expiry: NodeJS.Timeout | null = null;
  let active = 0;
  return {
    jobs,
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
      jobs.onLost?.(() => void scheduling.syncSchedules().catch(() => {}));
      expiry = setInterval(() => void scheduling.expire(), 30_000);
      expiry.unref();
    },
    async close() {
      if (expiry) clearInterval(expiry);
      launcher.close();
      await jobs.close();
    },
  };
}
