import type { Workspaces } from '../../core/files/session-folder.js';
import { sessionFs } from '../../core/files/workspace-fs.js';
import type { SessionFiles, SessionScope } from './api.js';

/**
 * api.files: session folders for plugins, through the confined file layer (files/workspace-fs.ts),
 * the same as the file endpoints and tools, so a link the agent plants in the workspace never makes
 * a plugin read or write outside it. Plugins never get a host path.
 */
export function sessionFiles(root: string, workspaces?: Workspaces): SessionFiles {
  const fs = (s: SessionScope) => sessionFs(root, s.userId, s.sessionId);
  return {
    workspace(scope) {
      if (!workspaces) throw new Error('no session folders in this host');
      return workspaces.forSession(scope.userId, scope.sessionId);
    },
    read: (scope, path, maxBytes) => fs(scope).read(path, maxBytes),
    list: async (scope, path) => (await fs(scope).list(path)).map((x) => ({ name: x.name, type: x.type, size: x.size ?? 0 })),
    async write(scope, path, data, opts = {}) {
      await fs(scope).write(path, data, opts);
    },
    remove: (scope, path) => fs(scope).remove(path),
  };
}
