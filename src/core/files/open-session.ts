/**
 * The confined walk inside an opened, verified session folder (confine.ts opens it): every path
 * is walked component by component, each folder opened O_NOFOLLOW through the descriptor of its
 * parent, links read with readlink and resolved here (never by the kernel), and the final entry
 * is reached through its parent's descriptor. A link swapped in after a check is never followed.
 */
import { lstat, mkdir, open, readdir, readlink, type FileHandle } from 'node:fs/promises';
import { DanglingLinkError, MAX_LINKS, PathEscapeError, pathComponents } from './confine-paths.js';
import { at, closeAll, DIR_FLAGS, isLink } from './descriptors.js';
import type { Account } from './quota.js';

/** Bound on walk steps, so folders deleted and re-created under us cannot spin the walk forever. */
const MAX_STEPS = 4096;

/** What the walk needs to know of the folder it walks (SessionFolder, confine.ts). */
export interface FolderView {
  /** Host path of the folder (as configured, unresolved). */
  readonly hostDir: string;
  /** The same folder as the computer's processes see it (absolute paths the model gives). */
  readonly computerDir?: string;
  /** Whose storage quota the folder's bytes count against (quota.ts); none: not counted. */
  readonly account?: Account;
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
  readonly account?: Account;
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
    private readonly owner: FolderView,
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

