import { posix } from 'node:path';
import type { Computer, Runner } from '../../../runners/types.js';
import { at, SessionFolder } from './confine.js';
import { type Owner, removeEntry } from './entry-ops.js';
import { StorageQuota } from './quota.js';
import { confinedFs, type FolderFs } from './folder-fs.js';

export { PathEscapeError } from './confine.js';

/**
 * A session's folder inside its user's computer; host code reaches its files only through `files`.
 * Everything here is fixed when it is made (SessionFolders.forSession): the computer is acquired on
 * first use, and what that changes nothing else reads.
 */
export interface SessionSandbox {
  /**
   * The same folder as processes inside the computer see it, known before the computer is acquired:
   * under the runner's `computerRoot` (docker: /workspace/<session>), else the host folder (local).
   */
  readonly computerDir: string;
  /** The session folder, verified and walked by descriptors (the confined file layer). */
  readonly folder: SessionFolder;
  /** The confined file operations on the session folder. */
  readonly files: FolderFs;
  /** The user's computer (created on first use). */
  computer(): Promise<Computer>;
}

/** Ids we generate are base62 with a prefix; anything else must not name a folder to remove. */
const SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * rm -rf of a session folder through the descriptor of the verified user folder: a link (or file)
 * where the folder should be is removed itself, and nothing below is ever followed.
 */
export async function removeSessionFolder(root: string, userId: string, sessionId: string): Promise<void> {
  if (!SAFE_ID.test(userId) || !SAFE_ID.test(sessionId)) return;
  const opened = await SessionFolder.of(root, userId, sessionId).openUser();
  if (!opened) return;
  try {
    await removeEntry(at(opened.user, sessionId));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  } finally {
    await opened.close();
  }
}

const runsAsRoot = process.getuid?.() === 0;

/**
 * The confined file layer with new entries handed to `owner()`, asked only by the operations that
 * make entries (write, mkdir, rename's folders, copy); reads never wait for it.
 */
export function ownedFs(folder: SessionFolder, owner: () => Promise<Owner | undefined>): FolderFs {
  const plain = confinedFs(folder);
  const owned = async () => confinedFs(folder, await owner());
  return {
    ...plain,
    write: async (path, data, opts) => (await owned()).write(path, data, opts),
    mkdir: async (path) => (await owned()).mkdir(path),
    rename: async (from, to) => (await owned()).rename(from, to),
    copy: async (from, to) => (await owned()).copy(from, to),
  };
}

/**
 * Session folders inside users' computers, under the workspaces root (config.workspaces). Every
 * folder it makes counts its writes against `quota`, the service's own (quota.ts).
 */
export class SessionFolders {
  constructor(
    private readonly root: string,
    private readonly runner: Runner | null,
    readonly quota: StorageQuota = new StorageQuota(root, 0),
  ) {}

  /** rm -rf of a session's folder (removeSessionFolder under this root). */
  removeSession(userId: string, sessionId: string): Promise<void> {
    return removeSessionFolder(this.root, userId, sessionId);
  }

  /**
   * Whom entries the service makes in a user's tree (REST writes, uploads, copies) belong to: the
   * computer's user (Computer.owner) when it is not the service's, so the agent can read and change
   * them. Only a root service hands entries over. The home the runner handed over says it without
   * starting anything; before that, the computer is acquired (the runner hands the home over then).
   * Undefined when there is no runner or it cannot start: the entry stays the service's, as before.
   */
  async owner(userId: string): Promise<Owner | undefined> {
    if (!runsAsRoot || !this.runner) return undefined;
    const home = await SessionFolder.home(this.root, userId).openUser().catch(() => null);
    const st = home ? await home.user.stat().finally(() => home.close()) : null;
    if (st && st.uid !== 0) return { uid: st.uid, gid: st.gid };
    return (await this.runner.acquire(userId).catch(() => null))?.owner;
  }

  /** A session's folder, its writes counted against the quota. */
  folder(userId: string, sessionId: string, computerDir?: string): SessionFolder {
    return SessionFolder.of(this.root, userId, sessionId, { quota: this.quota, computerDir });
  }

  /** A session's folder through the confined file layer (new entries stay the service's). */
  sessionFs(userId: string, sessionId: string): FolderFs {
    return confinedFs(this.folder(userId, sessionId));
  }

  /** A user's whole computer home (`.profile`, `.prod_agents/...`), new entries owned by the computer's user. */
  home(computer: Computer): FolderFs {
    return confinedFs(SessionFolder.home(this.root, computer.userId, { computerDir: computer.root, quota: this.quota }), computer.owner);
  }

  forSession(userId: string, sessionId: string): SessionSandbox {
    const runner = this.runner;
    const computerDir = runner?.computerRoot ? posix.join(runner.computerRoot, sessionId) : SessionFolder.of(this.root, userId, sessionId).hostDir;
    const folder = this.folder(userId, sessionId, computerDir);
    // Made once, on first use: the computer and the session folder verified in it.
    const acquire = once(async () => {
      if (!runner) throw new Error('no runner configured');
      const c = await runner.acquire(userId);
      // Made (or verified: a real folder, not a planted link) before anything runs in it. The
      // production image runs tools as a non-root user: the session folder must be theirs.
      await folder.with(async (s) => {
        if (c.owner) await s.fh.chown(c.owner.uid, c.owner.gid);
      });
      return c;
    });
    return {
      computerDir,
      folder,
      // New entries are the computer's user's: the one acquired, else the one it would have.
      files: ownedFs(folder, async () => (acquire.started() ? (await acquire().catch(() => null))?.owner : this.owner(userId))),
      computer: acquire,
    };
  }
}

/** `fn` called once, on the first call; every call answers its one promise. */
function once<T>(fn: () => Promise<T>): (() => Promise<T>) & { started(): boolean } {
  let p: Promise<T> | undefined;
  return Object.assign(() => (p ??= fn()), { started: () => p !== undefined });
}
