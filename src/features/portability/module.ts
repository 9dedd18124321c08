import { portabilityRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** Export and import of a session (docs/sharing-and-portability.md). */
export const portabilityModule = defineModule({
  name: 'portability',
  needs: ['sessions', 'quota', 'engine', 'timetravel', 'agents', 'memories', 'annotations', 'settings'],
  start(ctx) {
    const sessions = ctx.get('sessions');
    const parts = {
      sessions,
      turns: ctx.get('engine').turns,
      timetravel: ctx.get('timetravel').store,
      tasks: ctx.get('agents'),
      memories: ctx.get('memories').store,
      annotations: ctx.get('annotations'),
      buckets: ctx.get('settings'),
    };
    return { routes: [{ plugin: portabilityRoutes, opts: { config: ctx.config, db: ctx.db, quota: ctx.get('quota'), parts, sessions } }] };
  },
});
