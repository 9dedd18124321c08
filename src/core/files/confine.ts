/**
 * The one place where a path given by a client or the model becomes a file of a session folder.
 *
 * The sandbox can write the user's workspace folder (AGENTSVC_HOME/workspaces/<user>), so anything
 * below it may be a symlink, and may change between any two system calls of ours. Therefore:
 * - the user and session folders are opened with O_DIRECTORY|O_NOFOLLOW, one component at a time
 *   from the (operator-owned) workspaces folder: a symlink or a file standing there is refused, and
 *   creating the session folder is mkdir then that same verifying open (here);
 * - every path inside is walked component by component, each folder opened O_NOFOLLOW through the
 *   file descriptor of its parent (`/proc/self/fd/N/name` is resolved by the kernel from that open
 *   folder, like openat), so a link swapped in after a check is never followed. Links found on the
 *   way are read with readlink and resolved by this walk, never by the kernel (open-session.ts);
 * - the final entry is opened or changed through its parent's descriptor, O_NOFOLLOW.
 * Linux only (/proc), like the runners.
 */
import { constants, lstatSync, opendirSync } from 'node:fs';
import { mkdir, open, realpath, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DanglingLinkError, PathEscapeError, NotAFolderError, relativeComponents, resolveNow } from './confine-paths.js';
import { at, closeAll, openOwnFolder } from './descriptors.js';
import { OpenSession, type PathGuard } from './open-session.js';
import type { Account, StorageQuota } from './quota.js';

export { DanglingLinkError, PathEscapeError, NotAFolderError };
export { at };
export { OpenSession, type Entry, type PathGuard, type WalkOptions } from './open-session.js';

const { O_RDONLY, O_DIRECTORY } = constants;
const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

/** What a folder is made with besides where it is; fixed for its lifetime. */
export interface FolderOptions {
  /** The same folder as the computer's processes see it (absolute paths the model gives). */
  computerDir?: string;
  /** The storage quota its writes count against (quota.ts); none: writes are not counted. */
  quota?: StorageQuota;
}

/**
 * One session's folder, AGENTSVC_HOME/workspaces/<user>/<session>, or with `session` null the
 * user's whole computer home, AGENTSVC_HOME/workspaces/<user> (its `.profile`, `.prod_agents`).
 */
export class SessionFolder {
  /** Host path of the folder (as configured, unresolved). */
  readonly hostDir: string;

  /** The same folder as the computer's processes see it (absolute paths the model gives). */
  readonly computerDir?: string;
  /** Whose quota the folder's bytes count against; undefined when made without a quota. */
  readonly account?: Account;

  constructor(
    /** AGENTSVC_HOME/workspaces: the operator's; links above and at it are trusted. */
    readonly base: string,
    readonly user: string,
    readonly session: string | null,
    opts: FolderOptions = {},
  ) {
    for (const n of session === null ? [user] : [user, session])
      if (!SAFE_NAME.test(n)) throw new PathEscapeError(`invalid workspace name ${JSON.stringify(n)}`);
    this.hostDir = session === null ? join(base, user) : join(base, user, session);
    this.computerDir = opts.computerDir;
    this.account = opts.quota && { quota: opts.quota, user };
  }

  /** The tool policy's check of what the agent's file tools open (never used by the REST endpoints). */
  pathGuard?: PathGuard;

  /** `root`: the workspaces root (config.workspaces). */
  static of(root: string, userId: string, sessionId: string, opts?: FolderOptions): SessionFolder {
    return new SessionFolder(resolve(root), userId, sessionId, opts);
  }

  /** The user's computer home (the folder every session folder of theirs is in). */
  static home(root: string, userId: string, opts?: FolderOptions): SessionFolder {
    return new SessionFolder(resolve(root), userId, null, opts);
  }

  /*
   * Hints by plain path, for the run start's common case of a session that has no files yet: they
   * verify nothing, so they only ever answer "nothing there" or "unsure"; whatever is there goes
   * through the verified open as always. A link planted in the folder can only make the user's own
   * listing or checkpoint look empty. They are synchronous on purpose: one lstat (and, for a folder
   * that exists, one bounded read of its first entry) takes microseconds, where the same call on
   * the thread pool cost the event loop a request, a wake-up and, for a missing entry, an Error
   * with its stack (a missing folder was 6.7% of a run start's CPU in a profile of paced K=200).
   * A missing entry is answered without an exception (`throwIfNoEntry: false`).
   */

  /** The session folder has no entries, or does not exist (false when unsure: a link, an error). */
  emptyOrMissing(): boolean {
    try {
      const st = lstatSync(this.hostDir, { throwIfNoEntry: false });
      if (!st) return true;
      if (!st.isDirectory()) return false;
      // The first entry only: a folder of 100,000 files is not listed to say it is not empty.
      const dir = opendirSync(this.hostDir, { bufferSize: 1 });
      try {
        return dir.readSync() === null;
      } finally {
        dir.closeSync();
      }
    } catch {
      return false;
    }
  }

  /** The first component of relative `path` is not in the session folder (false when unsure). */
  lacks(path: string): boolean {
    if (typeof path !== 'string' || path.includes('\0')) return false;
    const p = path.replace(/\\/g, '/');
    if (p.startsWith('/')) return false;
    let parts: string[];
    try {
      parts = relativeComponents(p, path);
    } catch {
      return false;
    }
    if (!parts.length) return false;
    try {
      return lstatSync(join(this.hostDir, parts[0]), { throwIfNoEntry: false }) === undefined;
    } catch {
      return false;
    }
  }

  /**
   * The canonical workspace-relative path `path` names right now, resolved as the confined walk
   * with `follow` resolves it (`..` lexically first, then every link read here and resolved inside
   * the folder; an absolute target as the host or the computer sees the folder), for a check that
   * must not wait on the thread pool once per folder (the tool policy): synchronous lstat and
   * readlink by path, a few microseconds each, one per component. Components that do not exist
   * yet are kept as given. Null when the path leaves the folder, goes through a dangling link or
   * past a file, or the user or session folder is not a real folder (the file tools refuse those),
   * and past 128 folders and links' parts (a synchronous walk must stay short).
   * What a tool touches is walked again, confined, when it runs.
   */
  resolveNow(path: string): string | null {
    return resolveNow(this, path);
  }

  /** The workspaces folder and the verified user folder, open; null when absent and !create. */
  private async openUserChain(create: boolean): Promise<FileHandle[] | null> {
    const chain: FileHandle[] = [];
    try {
      // The workspaces folder is made when missing (once, in practice): no mkdir call per open.
      const openBase = () => open(this.base, O_RDONLY | O_DIRECTORY);
      const base = await openBase().catch(async (e) => {
        if (e.code !== 'ENOENT') throw e;
        if (!create) return null;
        await mkdir(this.base, { recursive: true });
        return openBase();
      });
      if (!base) return null;
      chain.push(base);
      const user = await openOwnFolder(base, this.user, create, 'user workspace');
      if (!user) return closeAll(chain).then(() => null);
      chain.push(user);
      return chain;
    } catch (e) {
      await closeAll(chain);
      throw e;
    }
  }

  /** Open and verify the user and session folders (made when missing); null when absent and !create. */
  async open(create = true): Promise<OpenSession | null> {
    const chain = await this.openUserChain(create);
    if (!chain) return null;
    try {
      const base = await realpath(at(chain[0]));
      if (this.session === null) return new OpenSession(chain[1], join(base, this.user), this, chain);
      const session = await openOwnFolder(chain[1], this.session, create, 'session');
      if (!session) return closeAll(chain).then(() => null);
      return new OpenSession(session, join(base, this.user, this.session), this, [...chain, session]);
    } catch (e) {
      await closeAll(chain);
      throw e;
    }
  }

  /** Run `fn` with the verified session folder open; everything opened through it is closed after. */
  async with<T>(fn: (s: OpenSession) => Promise<T>): Promise<T> {
    const s = (await this.open(true))!;
    try {
      return await fn(s);
    } finally {
      await s.close();
    }
  }

  /** The user folder, open and verified (for removing a session folder from it); null when absent. */
  async openUser(): Promise<{ user: FileHandle; close(): Promise<void> } | null> {
    const chain = await this.openUserChain(false);
    return chain && { user: chain[1], close: () => closeAll(chain) };
  }
}
