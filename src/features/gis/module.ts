import { gisRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** Map layers of a session. */
export const gisModule = defineModule({
  name: 'gis',
  needs: ['sessions'],
  start: (ctx) => ({ routes: [{ plugin: gisRoutes, opts: { sessions: ctx.get('sessions') } }] }),
});
