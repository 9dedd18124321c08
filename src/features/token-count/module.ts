import { tokenizeRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** Token counts of a text for a model. */
export const tokenizeModule = defineModule({
  name: 'tokenize',
  needs: [],
  start: (ctx) => ({ routes: [{ plugin: tokenizeRoutes, opts: { defaultModel: ctx.config.model.default } }] }),
});
