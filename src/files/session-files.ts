import { constants } from 'node:fs';
import { cp, copyFile, lstat, mkdir, open, readdir, realpath, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, extname, join, posix, relative, sep } from 'node:path';
import { AppError, Errors } from '../server/errors.js';
import { sessionHostDir } from './paths.js';
import { confine, PathEscapeError } from './workspace.js';

/** A resolved workspace path: `abs` on the host, `rel` as the client names it ('' is the root). */
export interface Located {
  abs: string;
  rel: string;
}

/** The file endpoints' own errors, beside the catalog's. */
export const FileErrors = {
  escape: (msg: string) => new AppError(422, 'PATH_OUTSIDE_WORKSPACE', msg),
  isDir: () => new AppError(422, 'IS_A_DIRECTORY', 'the path is a directory, not a file'),
  notDir: () => new AppError(422, 'NOT_A_DIRECTORY', 'the path is not a directory'),
  parentNotDir: () => new AppError(422, 'NOT_A_DIRECTORY', 'a parent of the path is not a directory'),
  notFile: () => new AppError(422, 'NOT_A_FILE', 'the path is not a regular file'),
};
const escapeError = FileErrors.escape;

const isInside = (root: string, p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

/**
 * The folder of one session as the file endpoints see it. Every path goes through `confine()`,
 * so `..`, absolute paths outside and symlinks that lead out are refused (422).
 */
export class SessionFiles {
  private realRoot: string | null = null;

  constructor(readonly hostDir: string) {}

  static of(home: string, userId: string, sessionId: string): SessionFiles {
    return new SessionFiles(sessionHostDir(home, userId, sessionId));
  }

  /** The session folder, created on first use, with symlinks in its own path resolved. */
  async root(): Promise<string> {
    if (this.realRoot) return this.realRoot;
    await mkdir(this.hostDir, { recursive: true });
    this.realRoot = await realpath(this.hostDir);
    return this.realRoot;
  }

  /** Lexically normalized workspace-relative path: '' for the root; throws for `..` out of it. */
  async relative(path: string): Promise<string> {
    if (path.includes('\0')) throw escapeError('invalid path');
    let p = path.replace(/\\/g, '/');
    if (p.startsWith('/')) {
      const normal = posix.normalize(p);
      const root = await this.root();
      const base = [this.hostDir, root].find((r) => isInside(r, normal));
      if (!base) throw escapeError(`${path} is outside the workspace`);
      p = normal.slice(base.length).replace(/^\/+/, '');
    }
    const rel = posix.normalize(p === '' ? '.' : p).replace(/\/+$/, '');
    if (rel === '..' || rel.startsWith('../')) throw escapeError(`${path} is outside the workspace`);
    return rel === '.' || rel === '' ? '' : rel;
  }

  /** The path with every symlink on it followed; the result must stay inside the workspace. */
  async follow(path: string): Promise<Located> {
    const rel = await this.relative(path);
    return { rel, abs: await this.confined(rel) };
  }

  /**
   * The entry itself: its folder is confined, its last segment is not followed, so a symlink is
   * deleted or renamed as a link and what it points to is never touched.
   */
  async entry(path: string): Promise<Located> {
    const rel = await this.relative(path);
    if (rel === '') return { rel, abs: await this.root() };
    const dir = await this.confined(posix.dirname(rel));
    return { rel, abs: join(dir, posix.basename(rel)) };
  }

  /** Workspace-relative form of a confined host path. */
  async relOf(abs: string): Promise<string> {
    return relative(await this.root(), abs).split(sep).join('/');
  }

  private async confined(rel: string): Promise<string> {
    const root = await this.root();
    try {
      return await confine(root, root, rel === '' ? '.' : rel);
    } catch (e) {
      if (e instanceof PathEscapeError) throw escapeError(e.message);
      // realpath of a dangling or looping symlink: its target cannot be checked, so it is not used.
      if (e.code === 'ENOENT') throw Errors.notFound('file');
      if (e.code === 'ELOOP') throw escapeError(`${rel} is a symlink loop`);
      throw e;
    }
  }
}

/** Map a failed fs call to the error catalog; anything unexpected stays a 500. */
export function fsError(e: NodeJS.ErrnoException, what = 'file'): Error {
  switch (e.code) {
    case 'ENOENT':
      return Errors.notFound(what);
    case 'ENOTDIR':
      return FileErrors.parentNotDir();
    case 'EISDIR':
      return FileErrors.isDir();
    case 'ENXIO':
      return FileErrors.notFile();
    case 'EEXIST':
    case 'ENOTEMPTY':
      return Errors.conflict('ALREADY_EXISTS', 'the target already exists');
    case 'ENAMETOOLONG':
      return Errors.invalid(['path'], 'name too long');
    case 'ELOOP':
      return escapeError('too many levels of symbolic links');
    case 'EACCES':
    case 'EPERM':
      return Errors.forbidden('permission denied');
  }
  return e;
}

const { O_RDONLY, O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW, O_NONBLOCK } = constants;

/**
 * Open a confined regular file. O_NOFOLLOW: a link swapped in after `confine()` is not followed;
 * O_NONBLOCK: a FIFO planted in the workspace cannot hang the request (it is refused instead).
 */
export async function openFile(abs: string, mode: 'read' | 'write'): Promise<FileHandle> {
  const flags = (mode === 'read' ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC) | O_NOFOLLOW | O_NONBLOCK;
  let fh: FileHandle;
  try {
    fh = await open(abs, flags, 0o666);
  } catch (e) {
    throw fsError(e);
  }
  const st = await fh.stat();
  if (st.isFile()) return fh;
  await fh.close();
  throw st.isDirectory() ? FileErrors.isDir() : FileErrors.notFile();
}

/** mkdir -p of a file's folder; a file standing where a folder is needed is a 422, not a conflict. */
export async function ensureParent(abs: string): Promise<void> {
  try {
    await mkdir(dirname(abs), { recursive: true });
  } catch (e) {
    if (e.code === 'EEXIST' || e.code === 'ENOTDIR') throw FileErrors.parentNotDir();
    throw e;
  }
}

export async function exists(abs: string): Promise<boolean> {
  try {
    await lstat(abs);
    return true;
  } catch (e) {
    if (e.code === 'ENOENT') return false;
    throw e;
  }
}

export interface ListedEntry {
  name: string;
  type: 'file' | 'directory';
  size?: number;
}

/**
 * One folder's entries, folders first, then by name (code point order). A symlink shows what it
 * points to when that is inside the workspace; one that leads out (or nowhere) shows as an empty
 * file, so nothing about the outside leaks.
 */
export async function listDir(abs: string, root: string): Promise<ListedEntry[]> {
  const dirents = await readdir(abs, { withFileTypes: true });
  const out = await Promise.all(
    dirents.map(async (d): Promise<ListedEntry | null> => {
      const full = join(abs, d.name);
      try {
        let st = await lstat(full);
        if (st.isSymbolicLink()) {
          const real = await realpath(full).catch(() => null);
          if (!real || !isInside(root, real)) return { name: d.name, type: 'file', size: 0 };
          st = await stat(real);
        }
        return st.isDirectory() ? { name: d.name, type: 'directory' } : { name: d.name, type: 'file', size: st.size };
      } catch (e) {
        if (e.code === 'ENOENT') return null; // removed while listing
        throw e;
      }
    }),
  );
  return out
    .filter((e): e is ListedEntry => e !== null)
    .sort((a, b) => (a.type !== b.type ? (a.type === 'directory' ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Remove a file, a symlink (the link only) or a folder tree (fs.rm never follows links inside it). */
export async function removeEntry(abs: string): Promise<void> {
  const st = await lstat(abs);
  if (st.isDirectory()) await rm(abs, { recursive: true, force: false });
  else await unlink(abs);
}

/** `<stem> copy<ext>`, then `<stem> copy 2<ext>`, ...; folders get `<name> copy`, `<name> copy 2`. */
export function copyName(name: string, isDir: boolean, n: number): string {
  const ext = isDir ? '' : extname(name);
  const stem = name.slice(0, name.length - ext.length);
  return `${stem} copy${n > 1 ? ` ${n}` : ''}${ext}`;
}

/**
 * Copy `src` (already followed and confined) beside the entry named `rel`. Symlinks inside a
 * copied folder are copied as the same links (verbatim), never followed.
 */
export async function copyBeside(srcAbs: string, dirAbs: string, rel: string): Promise<string> {
  const st = await stat(srcAbs);
  const isDir = st.isDirectory();
  if (!isDir && !st.isFile()) throw FileErrors.notFile();
  const name = posix.basename(rel);
  for (let n = 1; n < 10000; n++) {
    const candidate = copyName(name, isDir, n);
    const dest = join(dirAbs, candidate);
    if (await exists(dest)) continue;
    try {
      if (isDir) await cp(srcAbs, dest, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true, preserveTimestamps: true });
      else await copyFile(srcAbs, dest, constants.COPYFILE_EXCL);
    } catch (e) {
      // Another request took the name between the check and the copy: try the next one.
      if (e.code === 'EEXIST' && !isDir) continue;
      throw e;
    }
    const dir = posix.dirname(rel);
    return dir === '.' ? candidate : `${dir}/${candidate}`;
  }
  throw Errors.conflict('ALREADY_EXISTS', 'too many copies');
}
