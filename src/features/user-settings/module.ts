import { envRoutes } from './env-routes.js';
import { settingsRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** A user's settings and environment variables. */
export const settingsModule = defineModule({
  name: 'settings',
  needs: [],
  start: (ctx) => ({ routes: [{ plugin: settingsRoutes, opts: { db: ctx.db } }, { plugin: envRoutes, opts: { config: ctx.config } }] }),
});
