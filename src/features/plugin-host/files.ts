import type { SessionFolders } from '../../core/files/session-folder.js';
import type { SessionFiles } from './api.js';

/**
 * api.files: session folders for plugins, through the confined file layer (files/folder-fs.ts),
 * the same as the file endpoints and tools, so a link the agent plants in the workspace never makes
 * a plugin read or write outside it. Plugins never get a host path. Their writes count against the
 * storage quota of `folders`.
 */
export function sessionFiles(folders: SessionFolders): SessionFiles {
  const fs = (s: { userId: string; sessionId: string }) => folders.sessionFs(s.userId, s.sessionId);
  return {
    workspace: (scope) => folders.forSession(scope.userId, scope.sessionId),
    read: (scope, path, maxBytes) => fs(scope).read(path, maxBytes),
    list: async (scope, path) => (await fs(scope).list(path)).map((x) => ({ name: x.name, type: x.type, size: x.size ?? 0 })),
    async write(scope, path, data, opts = {}) {
      await fs(scope).write(path, data, opts);
    },
    remove: (scope, path) => fs(scope).remove(path),
  };
}
