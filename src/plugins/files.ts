import { SessionFolder } from '../files/confine.js';
import { listDir, openRead, removeEntry, statEntry, writeWhole } from '../files/entry-ops.js';
import type { Workspaces } from '../files/workspace.js';
import type { SessionFiles, SessionScope } from './api.js';

/**
 * api.files: session folders for plugins, through the same confined walk as the file endpoints
 * (every component opened O_NOFOLLOW through its parent), so a link the agent plants in the
 * workspace never makes a plugin read or write outside it.
 */
export function sessionFiles(root: string, workspaces?: Workspaces): SessionFiles {
  const folder = (s: SessionScope) => SessionFolder.of(root, s.userId, s.sessionId);
  return {
    workspace(scope) {
      if (!workspaces) throw new Error('no session folders in this host');
      return workspaces.forSession(scope.userId, scope.sessionId);
    },
    async read(scope, path, maxBytes = 1024 * 1024) {
      return folder(scope).with(async (s) => {
        const e = await s.walk(path, { follow: true });
        try {
          const fh = await openRead(e);
          try {
            const { size } = await fh.stat();
            if (size > maxBytes) throw Object.assign(new Error(`${path} is ${size} bytes, over ${maxBytes}`), { code: 'EFBIG' });
            return await fh.readFile();
          } finally {
            await fh.close();
          }
        } finally {
          await e.close();
        }
      });
    },
    async list(scope, path) {
      // Most lists at a run start are of folders that do not exist (a session without session
      // skills): a plain lstat tells, without opening and verifying the folder chain. Only a hint:
      // whatever it finds is listed through the confined walk, as always.
      if (await folder(scope).lacks(path)) throw Object.assign(new Error(`${path}: no such file or directory`), { code: 'ENOENT' });
      return folder(scope).with(async (s) => {
        const e = await s.walk(path, { follow: true });
        try {
          if (!(await statEntry(e)).isDirectory()) return [];
          return (await listDir(s, e)).map((x) => ({ name: x.name, type: x.type, size: x.size ?? 0 }));
        } finally {
          await e.close();
        }
      });
    },
    async write(scope, path, data, opts = {}) {
      await folder(scope).with(async (s) => {
        const e = await s.walk(path, { follow: true, mkdirs: true });
        try {
          const { fh } = await writeWhole(e, data);
          try {
            if (opts.executable) await fh.chmod(0o755);
          } finally {
            await fh.close();
          }
        } finally {
          await e.close();
        }
      });
    },
    async remove(scope, path) {
      await folder(scope).with(async (s) => {
        const e = await s.walk(path).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return null;
          throw err;
        });
        if (!e) return;
        try {
          if (e.rel === '') throw new Error('the workspace root cannot be removed');
          await removeEntry(e.path);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        } finally {
          await e.close();
        }
      });
    },
  };
}
