import { skillRoutes } from './routes.js';
import { defineModule } from '../../platform/lib/modules.js';

/** The skills library and a session's skills (docs/plugins.md). */
export const skillsModule = defineModule({
  name: 'skills',
  needs: ['sessions', 'folders', 'engine', 'plugins'],
  start: (ctx) => ({ routes: [{ plugin: skillRoutes, opts: { config: ctx.config, folders: ctx.get('folders'), sessions: ctx.get('sessions'), conversation: ctx.get('engine').conversation, library: ctx.get('plugins').firstParty.skills, toolsChanged: () => ctx.tools.changed() } }] }),
});
