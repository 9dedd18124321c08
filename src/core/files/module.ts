import { defineModule } from '../../platform/lib/modules.js';
import { fileRoutes } from './routes.js';
import { Workspaces } from './session-folder.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** The session folders (src/core/files/session-folder.ts), reached through the runner. */
    folders: Workspaces;
  }
}

/** Session folders: what tools, roles and plugins read and write, through the user's computer. */
export const foldersModule = defineModule({
  name: 'folders',
  needs: ['runner'],
  start: (ctx) => ({ provides: new Workspaces(ctx.config.workspaces, ctx.get('runner').runner) }),
});

/** The files routes of a session (docs/sessions-and-runs.md). */
export const filesModule = defineModule({
  name: 'files',
  needs: ['sessions', 'folders'],
  start: (ctx) => ({ routes: [{ plugin: fileRoutes, opts: { config: ctx.config, sessions: ctx.get('sessions'), folders: ctx.get('folders') } }] }),
});
