import { envRoutes } from './env-routes.js';
import { settingsRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';
import { EnvBucketStore, PreferenceStore } from './store.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** A user's env buckets (what a share or an archive masks). */
    settings: EnvBucketStore;
  }
}

/** A user's settings and environment variables. */
export const settingsModule = defineModule({
  name: 'settings',
  needs: [],
  start(ctx) {
    const buckets = new EnvBucketStore(ctx.db);
    return { provides: buckets, routes: [{ plugin: settingsRoutes, opts: { preferences: new PreferenceStore(ctx.db), buckets } }, { plugin: envRoutes, opts: { config: ctx.config } }] };
  },
});
