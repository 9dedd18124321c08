import { frontendConfigRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** The web console's configuration document. */
export const frontendConfigModule = defineModule({
  name: 'frontendConfig',
  needs: [],
  start: (ctx) => ({ routes: [{ plugin: frontendConfigRoutes, opts: { home: ctx.config.home } }] }),
});
