import { chown, mkdir, realpath, lstat, readlink } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep, posix } from 'node:path';
import type { Computer, Runner } from '../../runners/types.js';
import type { SessionWorkspace } from '../tools/types.js';
import { sessionHostDir } from './paths.js';

/** A path that would leave the session folder: 422 on REST, a tool error for tools. */
export class PathEscapeError extends Error {
  readonly code = 'PATH_OUTSIDE_WORKSPACE';
}

function inside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (!rel.startsWith('..' + sep) && rel !== '..' && !isAbsolute(rel));
}

/**
 * Resolve `path` (relative to the session folder, or absolute as the computer sees it) to a host
 * path inside hostDir. The deepest existing ancestor is resolved with realpath, so a symlink that
 * points out of the folder is refused even when the final file does not exist yet.
 */
export async function confine(hostDir: string, computerDir: string, path: string): Promise<string> {
  if (typeof path !== 'string' || path.includes('\0')) throw new PathEscapeError('invalid path');
  let rel = path.replace(/\\/g, '/');
  if (rel.startsWith('/')) {
    const normal = posix.normalize(rel);
    const base = computerDir.endsWith('/') ? computerDir : computerDir + '/';
    if (normal === computerDir || normal === base.slice(0, -1)) rel = '.';
    else if (normal.startsWith(base)) rel = normal.slice(base.length);
    else throw new PathEscapeError(`${path} is outside the workspace`);
  }
  const target = resolve(hostDir, rel);
  if (!inside(hostDir, target)) throw new PathEscapeError(`${path} is outside the workspace`);
  const realRoot = await realpath(hostDir);
  let probe = target;
  const tail: string[] = [];
  for (;;) {
    try {
      await lstat(probe);
      break;
    } catch {
      tail.unshift(probe.slice(probe.lastIndexOf(sep) + 1));
      probe = resolve(probe, '..');
    }
  }
  let base: string;
  try {
    base = await realpath(probe);
  } catch {
    // A dangling symlink: judge where it points, so nothing is ever created through it outside.
    const target = resolve(await realpath(resolve(probe, '..')), await readlink(probe));
    if (!inside(realRoot, target)) throw new PathEscapeError(`${path} resolves outside the workspace`);
    base = target;
  }
  const real = join(base, ...tail);
  if (!inside(realRoot, real)) throw new PathEscapeError(`${path} resolves outside the workspace`);
  return real;
}

/** Session folders inside users' computers. */
export class Workspaces {
  constructor(
    private readonly home: string,
    private readonly runner: Runner | null,
  ) {}

  forSession(userId: string, sessionId: string): SessionWorkspace {
    const hostDir = sessionHostDir(this.home, userId, sessionId);
    let computer: Promise<Computer> | null = null;
    const runner = this.runner;
    const ws: SessionWorkspace & { ensure(): Promise<string> } = {
      hostDir,
      // Until the computer is acquired we do not know its root; the local runner's root is the host dir.
      computerDir: hostDir,
      ensure: async () => {
        await mkdir(hostDir, { recursive: true });
        return hostDir;
      },
      resolve: async (p: string) => {
        await mkdir(hostDir, { recursive: true });
        return confine(hostDir, ws.computerDir, p);
      },
      computer: () => {
        if (!runner) return Promise.reject(new Error('no runner configured'));
        computer ??= runner.acquire(userId).then(async (c) => {
          (ws as { computerDir: string }).computerDir = posix.join(c.root, sessionId);
          await mkdir(hostDir, { recursive: true });
          // The production image runs tools as a non-root user: the session folder must be theirs.
          if (c.owner) await chown(hostDir, c.owner.uid, c.owner.gid);
          return c;
        });
        return computer;
      },
    };
    return ws;
  }
}
