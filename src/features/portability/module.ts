import { portabilityRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** Export and import of a session (docs/sharing-and-portability.md). */
export const portabilityModule = defineModule({
  name: 'portability',
  needs: ['sessions'],
  start: (ctx) => ({ routes: [{ plugin: portabilityRoutes, opts: { config: ctx.config, db: ctx.db, sessions: ctx.get('sessions') } }] }),
});
