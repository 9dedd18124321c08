import { defineModule } from '../../platform/lib/modules.js';
import { StorageQuota } from './quota.js';
import { fileRoutes } from './routes.js';
import { SessionFolders } from './session-folder.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** The storage quota of the users' workspaces (src/core/files/quota.ts, docs/storage-quota.md). */
    quota: StorageQuota;
    /** The session folders (src/core/files/session-folder.ts), reached through the runner. */
    folders: SessionFolders;
  }
}

/** The service's one storage quota (AGENTSVC_USER_QUOTA_BYTES): every folder that is written counts against it. */
export const quotaModule = defineModule({
  name: 'quota',
  needs: [],
  start: ({ config }) => ({ provides: new StorageQuota(config.workspaces, config.userQuotaBytes) }),
});

/** Session folders: what tools, roles and plugins read and write, through the user's computer. */
export const foldersModule = defineModule({
  name: 'folders',
  needs: ['runner', 'quota'],
  start: (ctx) => ({ provides: new SessionFolders(ctx.config.workspaces, ctx.get('runner').runner, ctx.get('quota')) }),
});

/** The files routes of a session (docs/sessions-and-runs.md). */
export const filesModule = defineModule({
  name: 'files',
  needs: ['sessions', 'folders'],
  start: (ctx) => ({ routes: [{ plugin: fileRoutes, opts: { config: ctx.config, sessions: ctx.get('sessions'), folders: ctx.get('folders') } }] }),
});
