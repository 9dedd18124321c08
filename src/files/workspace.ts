import { join, posix } from 'node:path';
import type { Computer, Runner } from '../../runners/types.js';
import type { SessionWorkspace } from '../tools/types.js';
import { SessionFolder } from './confine.js';

export { PathEscapeError } from './confine.js';

/** The confinement of a tool context's workspace (Read/Write/Edit walk paths through it). */
export function folderOf(ws: SessionWorkspace): SessionFolder {
  return SessionFolder.fromHostDir(ws.hostDir, ws.computerDir);
}

/** Session folders inside users' computers. */
export class Workspaces {
  constructor(
    private readonly home: string,
    private readonly runner: Runner | null,
  ) {}

  forSession(userId: string, sessionId: string): SessionWorkspace {
    const folder = SessionFolder.of(this.home, userId, sessionId);
    let computer: Promise<Computer> | null = null;
    const runner = this.runner;
    const ws: SessionWorkspace = {
      hostDir: folder.hostDir,
      // Until the computer is acquired we do not know its root; the local runner's root is the host dir.
      computerDir: folder.hostDir,
      // A host path for callers that need one (Grep, Glob, plugins): walked and verified now.
      resolve: (p: string) =>
        folder.with(async (s) => {
          try {
            const e = await s.walk(p, { follow: true });
            await e.close();
            return s.hostPath(e);
          } catch (e) {
            // Folders not made yet: the caller reports them missing (nothing there can be a link).
            if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
            return join(s.real, ...s.components(p));
          }
        }),
      computer: () => {
        if (!runner) return Promise.reject(new Error('no runner configured'));
        computer ??= runner.acquire(userId).then(async (c) => {
          const computerDir = posix.join(c.root, sessionId);
          (ws as { computerDir: string }).computerDir = computerDir;
          folder.computerDir = computerDir;
          // Made (or verified: a real folder, not a planted link) before anything runs in it. The
          // production image runs tools as a non-root user: the session folder must be theirs.
          await folder.with(async (s) => {
            if (c.owner) await s.fh.chown(c.owner.uid, c.owner.gid);
          });
          return c;
        });
        return computer;
      },
    };
    return ws;
  }
}
