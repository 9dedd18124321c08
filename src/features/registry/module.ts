import { registryRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** What is installed: skills, MCP servers, integrations, solutions, runners, models, plugins. */
export const registryModule = defineModule({
  name: 'registry',
  needs: ['plugins', 'solutions'],
  start: (ctx) => ({ routes: [{ plugin: registryRoutes, opts: { config: ctx.config, firstParty: ctx.get('plugins').firstParty, plugins: () => ctx.get('plugins').report, solutions: () => ctx.get('solutions').catalog.list() } }] }),
});
