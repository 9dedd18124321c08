import { defineModule } from '../../platform/lib/modules.js';
import { createRetention, type Retention } from './index.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    retention: Retention;
  }
}

/** The daily retention sweep (AGENTSVC_RETENTION_DAYS, AGENTSVC_CHECKPOINT_KEEP). */
export const retentionModule = defineModule({
  name: 'retention',
  needs: ['sessions', 'timetravel'],
  start(ctx) {
    const { days, checkpointKeep } = ctx.config.retention;
    const retention = createRetention({ sessions: ctx.get('sessions'), checkpoints: ctx.get('timetravel').store, logger: ctx.logger, days, checkpointKeep });
    return { provides: retention, jobs: [{ name: 'retention', start: () => retention.start(), stop: () => retention.close() }] };
  },
});
