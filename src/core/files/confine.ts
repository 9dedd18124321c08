/**
 * The one place where a path given by a client or the model becomes a file of a session folder.
 *
 * The sandbox can write the user's workspace folder (AGENTSVC_HOME/workspaces/<user>), so anything
 * below it may be a symlink, and may change between any two system calls of ours. Therefore:
 * - the user and session folders are opened with O_DIRECTORY|O_NOFOLLOW, one component at a time
 *   from the (operator-owned) workspaces folder: a symlink or a file standing there is refused, and
 *   creating the session folder is mkdir then that same verifying open;
 * - every path inside is walked component by component, each folder opened O_NOFOLLOW through the
 *   file descriptor of its parent (`/proc/self/fd/N/name` is resolved by the kernel from that open
 *   folder, like openat), so a link swapped in after a check is never followed. Links found on the
 *   way are read with readlink and resolved by this walk, never by the kernel;
 * - the final entry is opened or changed through its parent's descriptor, O_NOFOLLOW.
 * Linux only (/proc), like the runners.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DanglingLinkError, MAX_LINKS, PathEscapeError, WorkspaceFolderError, pathComponents, relativeComponents, resolveNow } from './confine-paths.js';

export { DanglingLinkError, PathEscapeError, WorkspaceFolderError };

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** Bound on walk steps, so folders deleted and re-created under us cannot spin the walk forever. */
const MAX_STEPS = 4096;

/** The kernel path of `name` inside the open folder `dir` (of `dir` itself without a name). */
export const at = (dir: FileHandle, name?: string | null): string => `/proc/self/fd/${dir.fd}${name ? `/${name}` : ''}`;

const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

async function closeAll(handles: FileHandle[]): Promise<void> {
  await Promise.all(handles.splice(0).map((h) => h.close().catch(() => {})));
}

const isLink = (path: string) => lstat(path).then((st) => st.isSymbolicLink(), () => false);

/** Open `name` in `parent` as a real folder (not a link); mkdir it first when asked. */
async function openOwnFolder(parent: FileHandle, name: string, create: boolean, what: string): Promise<FileHandle | null> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await open(at(parent, name), DIR_FLAGS);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && create && attempt < 3) {
        await mkdir(at(parent, name)).catch((m) => {
          if (m.code !== 'EEXIST') throw m;
        });
        continue;
      }
      if (code === 'ENOENT') return null;
      // O_DIRECTORY|O_NOFOLLOW on a link gives ELOOP or ENOTDIR depending on the kernel: tell them apart.
      if (code === 'ELOOP' || code === 'ENOTDIR') {
        const link = await isLink(at(parent, name));
        throw new WorkspaceFolderError(link ? `the ${what} folder is a symbolic link, not a directory; it is not followed` : `the ${what} folder is not a directory`);
      }
      throw e;
    }
  }
}

export interface WalkOptions {
  /** Follow a symlink in the last component (default false: the entry itself, e.g. to delete a link). */
  follow?: boolean;
  /** Create missing folders of the path (never folders named by a link's target). */
  mkdirs?: boolean;
  /** Folders this walk creates are handed to this uid/gid, through their own descriptor. */
  owner?: { uid: number; gid: number };
}

/** One entry of the session folder, reached by a confined walk. Close it when done. */
export interface Entry {
  /** The open folder that holds the entry (the session folder itself when `name` is null). */
  readonly dir: FileHandle;
  /** Its name in `dir`; null: the entry is `dir` itself (the root, or a folder reached by `..`). */
  readonly name: string | null;
  /** Canonical workspace-relative path ('' is the root). */
  readonly rel: string;
  /** Kernel path of the entry through `dir`'s descriptor: safe to pass to fs calls (lstat it with statEntry). */
  readonly path: string;
  /** Whose storage quota its bytes count against (quota.ts). */
  readonly account?: { root: string; user: string };
  /**
   * The canonical workspace-relative path of what is open now: of `fh` (a file opened from this
   * entry), else of the entry (its folder's descriptor and its name). Read from the kernel
   * (/proc/self/fd), so a folder renamed or a link swapped after the walk is seen as it is. Null
   * when it is no longer in the session folder (moved out, or deleted).
   */
  opened(fh?: FileHandle): Promise<string | null>;
  close(): Promise<void>;
}

/**
 * A check of the agent's file tools on the entry they opened (set by the tool policy on the
 * run's folder): a message when `rel` may not be used (`write`: to change it), else null.
 * docs/policy-paths.md.
 */
export type PathGuard = (rel: string, write: boolean) => string | null;

/** An opened, verified session folder. Everything opened through it is closed by close(). */
export class OpenSession {
  private readonly opened: FileHandle[] = [];

  constructor(
    readonly fh: FileHandle,
    /** Host path of the session folder, with the operator's links above the workspaces folder resolved. */
    readonly real: string,
    private readonly owner: SessionFolder,
    chain: FileHandle[],
  ) {
    this.opened.push(...chain);
  }

  async close(): Promise<void> {
    await closeAll(this.opened);
  }

  /** Map a path a client or the model gave to workspace-relative components; throws for `..` out. */
  components(path: string): string[] {
    return pathComponents(path, [this.owner.hostDir, this.real, this.owner.computerDir]);
  }

  /**
   * Walk `path` from the session folder. Links on the way are resolved here (readlink), each step
   * from an open folder with O_NOFOLLOW, and must stay inside; a dangling link is refused.
   */
  async walk(path: string, opts: WalkOptions = {}): Promise<Entry> {
    const stack: { fh: FileHandle; name: string }[] = [{ fh: this.fh, name: '' }];
    const mine: FileHandle[] = [];
    // Each pending component remembers whether it came from a link's target (never created).
    let todo = this.components(path).map((name) => ({ name, linked: false }));
    let links = 0;
    let steps = 0;
    const made = new Set<string>();
    try {
      let last: { dir: FileHandle; name: string } | null = null;
      while (todo.length) {
        if (++steps > MAX_STEPS) throw new PathEscapeError(`${path}: the folder keeps changing`);
        const { name, linked } = todo.shift()!;
        if (name === '' || name === '.') continue;
        if (name === '..') {
          if (stack.length === 1) throw new PathEscapeError(`${path} resolves outside the workspace`);
          stack.pop();
          continue;
        }
        const top = stack[stack.length - 1].fh;
        if (todo.length === 0) {
          const st = await lstat(at(top, name)).catch((e) => {
            if (e.code === 'ENOENT') return null;
            throw e;
          });
          if (!st && linked) throw new DanglingLinkError(`${path} is a dangling symbolic link; it is not followed`);
          if (!st?.isSymbolicLink() || !opts.follow) {
            last = { dir: top, name };
            break;
          }
        } else {
          try {
            const fh = await open(at(top, name), DIR_FLAGS);
            mine.push(fh);
            stack.push({ fh, name });
            if (made.delete(`${stack.length}/${name}`) && opts.owner) await fh.chown(opts.owner.uid, opts.owner.gid);
            continue;
          } catch (e) {
            const code = (e as NodeJS.ErrnoException).code;
            if (code === 'ENOENT' && linked) throw new DanglingLinkError(`${path} goes through a dangling symbolic link; it is not followed`);
            if (code === 'ENOENT' && opts.mkdirs) {
              const fresh = await mkdir(at(top, name)).then(
                () => true,
                (m) => {
                  if (m.code !== 'EEXIST') throw m;
                  return false;
                },
              );
              // Chowned once opened (O_NOFOLLOW), never by path: a link swapped in meanwhile is refused.
              if (fresh) made.add(`${stack.length + 1}/${name}`);
              todo.unshift({ name, linked });
              continue;
            }
            if ((code !== 'ELOOP' && code !== 'ENOTDIR') || !(await isLink(at(top, name)))) throw e;
          }
        }
        // `name` is a symlink: its target continues the walk, from the root when absolute.
        if (++links > MAX_LINKS) throw new PathEscapeError(`${path}: too many levels of symbolic links`);
        const target = await readlink(at(top, name)).catch((e) => {
          // No longer a link (swapped back meanwhile): look at this component again.
          if (e.code === 'EINVAL' || e.code === 'ENOENT') return null;
          throw e;
        });
        if (target === null) {
          links--;
          todo.unshift({ name, linked });
          continue;
        }
        if (target.startsWith('/')) stack.length = 1;
        const parts = target.startsWith('/') ? this.linkTarget(target, path) : target.split('/');
        todo = [...parts.map((n) => ({ name: n, linked: true })), ...todo];
      }
      let dir: FileHandle;
      let name: string | null;
      const names = stack.slice(1).map((s) => s.name);
      if (last) {
        ({ dir, name } = last);
        names.push(name);
      } else if (stack.length > 1) {
        // The path ended on a folder (after `..` or a link to a folder): name it from its parent.
        dir = stack[stack.length - 2].fh;
        name = stack[stack.length - 1].name;
      } else {
        dir = this.fh;
        name = null;
      }
      const rel = names.join('/');
      const close = () => closeAll(mine);
      const opened = async (fh?: FileHandle) => {
        const where = await this.relOf(fh ?? dir);
        return where === null || fh || name === null ? where : where ? `${where}/${name}` : name;
      };
      return { dir, name, rel, path: at(dir, name), account: this.owner.account, opened, close };
    } catch (e) {
      await closeAll(mine);
      throw e;
    }
  }

  /**
   * Regular files below the walked folder `start`, as paths relative to it and kernel paths through
   * the descriptors of their open folders (valid until this session is closed). Folders are opened
   * O_NOFOLLOW through their parent, so links are never entered; at most `maxDirs` folders are
   * opened (`stopped` tells the caller the listing is partial).
   */
  async *files(
    start: Entry,
    opts: { max: number; skip?: Set<string>; maxDirs: number; stopped?: boolean; leave?: (rel: string) => boolean },
  ): AsyncGenerator<{ rel: string; path: string }> {
    const first = start.name === null ? start.dir : await open(start.path, DIR_FLAGS);
    if (first !== start.dir) this.opened.push(first);
    const stack: { fh: FileHandle; rel: string }[] = [{ fh: first, rel: '' }];
    let dirs = 1;
    let n = 0;
    while (stack.length) {
      const d = stack.pop()!;
      const entries = await readdir(at(d.fh), { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const rel = d.rel ? `${d.rel}/${e.name}` : e.name;
        // Left out (a denied entry): a folder is not entered.
        if ((e.isDirectory() || e.isFile()) && opts.leave?.(rel)) continue;
        if (e.isDirectory()) {
          if (opts.skip?.has(e.name)) continue;
          if (dirs >= opts.maxDirs) {
            opts.stopped = true;
            return;
          }
          const fh = await open(at(d.fh, e.name), DIR_FLAGS).catch(() => null);
          if (!fh) continue;
          this.opened.push(fh);
          dirs++;
          stack.push({ fh, rel });
        } else if (e.isFile()) {
          yield { rel, path: at(d.fh, e.name) };
          if (++n >= opts.max) {
            opts.stopped = true;
            return;
          }
        }
      }
    }
  }

  /** The canonical workspace-relative path of an open descriptor (Entry.opened); null when outside. */
  async relOf(fh: FileHandle): Promise<string | null> {
    const host = await readlink(at(fh)).catch(() => null);
    if (host === null || host.endsWith(' (deleted)')) return null;
    if (host === this.real) return '';
    return host.startsWith(`${this.real}/`) ? host.slice(this.real.length + 1) : null;
  }

  private linkTarget(target: string, path: string): string[] {
    try {
      return this.components(target);
    } catch {
      throw new PathEscapeError(`${path} resolves outside the workspace`);
    }
  }

}

/**
 * One session's folder, AGENTSVC_HOME/workspaces/<user>/<session>, or with `session` null the
 * user's whole computer home, AGENTSVC_HOME/workspaces/<user> (its `.profile`, `.prod_agents`).
 */
export class SessionFolder {
  /** Host path of the folder (as configured, unresolved). */
  readonly hostDir: string;

  constructor(
    /** AGENTSVC_HOME/workspaces: the operator's; links above and at it are trusted. */
    readonly base: string,
    readonly user: string,
    readonly session: string | null,
    /** The same folder as the computer's processes see it (absolute paths the model gives). */
    public computerDir?: string,
  ) {
    for (const n of session === null ? [user] : [user, session])
      if (!SAFE_NAME.test(n)) throw new PathEscapeError(`invalid workspace name ${JSON.stringify(n)}`);
    this.hostDir = session === null ? join(base, user) : join(base, user, session);
  }

  /** The tool policy's check of what the agent's file tools open (never used by the REST endpoints). */
  pathGuard?: PathGuard;

  /** Whose quota the folder's bytes count against. */
  get account(): { root: string; user: string } {
    return { root: this.base, user: this.user };
  }

  /** `root`: the workspaces root (config.workspaces). */
  static of(root: string, userId: string, sessionId: string): SessionFolder {
    return new SessionFolder(resolve(root), userId, sessionId);
  }

  /** The user's computer home (the folder every session folder of theirs is in). */
  static home(root: string, userId: string, computerDir?: string): SessionFolder {
    return new SessionFolder(resolve(root), userId, null, computerDir);
  }

  /*
   * Hints by plain path, for the run start's common case of a session that has no files yet: they
   * follow links and verify nothing, so they only ever answer "nothing there" or "unsure"; whatever
   * is there goes through the verified open as always. A link planted in the folder can only make
   * the user's own listing or checkpoint look empty.
   */

  /** The session folder has no entries, or does not exist. */
  async emptyOrMissing(): Promise<boolean> {
    try {
      return (await readdir(this.hostDir)).length === 0;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT';
    }
  }

  /** The first component of relative `path` is not in the session folder (false when unsure). */
  async lacks(path: string): Promise<boolean> {
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
    return lstat(join(this.hostDir, parts[0])).then(
      () => false,
      (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
    );
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
