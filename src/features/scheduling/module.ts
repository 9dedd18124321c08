import { defineModule } from '../../platform/lib/modules.js';
import { createScheduling, type Scheduling } from './index.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    scheduling: Scheduling;
  }
}

/** Scheduled tasks: BullMQ with REDIS_URL, else the database-backed scheduler; started once the service listens. */
export const schedulingModule = defineModule({
  name: 'scheduling',
  needs: ['sessions', 'chat', 'engine', 'telemetry'],
  async start(ctx) {
    const scheduled = await createScheduling({
      db: ctx.db,
      logger: ctx.logger,
      models: ctx.config.model.models,
      redisUrl: ctx.config.redisUrl,
      pollMs: ctx.config.schedulerPollMs,
      sessions: ctx.get('sessions'),
      runs: ctx.get('chat').runs,
      hooks: ctx.hooks,
      conversation: ctx.get('engine').conversation,
    });
    ctx.get('telemetry').metrics.observeJobs(() => scheduled.jobCounts());
    return { provides: scheduled, routes: [scheduled.routes], jobs: [{ name: 'scheduler', start: () => scheduled.start(), stop: () => scheduled.close() }] };
  },
});
