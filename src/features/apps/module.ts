import { appRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** Apps a session serves. */
export const appsModule = defineModule({
  name: 'apps',
  needs: ['sessions'],
  start: (ctx) => ({ routes: [{ plugin: appRoutes, opts: { config: ctx.config, db: ctx.db, sessions: ctx.get('sessions') } }] }),
});
