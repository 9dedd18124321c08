import type { ModelPort } from './port.js';
import { defineModule } from '../../platform/lib/modules.js';
import { ModelRouter } from './router.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** The model port: the configured router (fallbacks, retries), or the one a benchmark passed. */
    models: ModelPort;
  }
}

export const modelsModule = defineModule({
  name: 'models',
  needs: [],
  start: (ctx) => ({ provides: ctx.model ?? new ModelRouter(ctx.config.model) }),
});
