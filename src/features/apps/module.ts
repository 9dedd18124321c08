import { appRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';
import { PublishedAppStore } from './store.js';

/** Apps a session serves. */
export const appsModule = defineModule({
  name: 'apps',
  needs: ['sessions'],
  start: (ctx) => ({ routes: [{ plugin: appRoutes, opts: { config: ctx.config, apps: new PublishedAppStore(ctx.db), sessions: ctx.get('sessions') } }] }),
});
