import { extname, posix } from 'node:path';
import { AppError, Errors } from '../../platform/server/errors.js';
import { at, PathEscapeError, NotAFolderError, type Entry } from './confine.js';
import { copyEntry, exists, type Owner, statEntry } from './entry-ops.js';

/** The file endpoints' own errors, beside the catalog's. */
export const FileErrors = {
  escape: (msg: string, code = 'PATH_OUTSIDE_WORKSPACE') => new AppError(422, code, msg),
  folder: (msg: string) => new AppError(422, 'WORKSPACE_NOT_A_DIRECTORY', msg),
  isDir: () => new AppError(422, 'IS_A_DIRECTORY', 'the path is a directory, not a file'),
  notDir: () => new AppError(422, 'NOT_A_DIRECTORY', 'the path is not a directory'),
  parentNotDir: () => new AppError(422, 'NOT_A_DIRECTORY', 'a parent of the path is not a directory'),
  notFile: () => new AppError(422, 'NOT_A_FILE', 'the path is not a regular file'),
  /** A full disk (or quota) is not bad input; the write was atomic, so nothing changed (docs/errors.md and docs/trust-boundary.md). */
  noSpace: () => new AppError(507, 'INSUFFICIENT_STORAGE', 'no space left to store the file; nothing was changed, try again once space is freed'),
};

/** Map a failed fs call or a confinement refusal to the error catalog; anything unexpected stays a 500. */
export function fsError(e: NodeJS.ErrnoException, what = 'file'): Error {
  if (e instanceof PathEscapeError) return FileErrors.escape(e.message, e.code);
  if (e instanceof NotAFolderError) return FileErrors.folder(e.message);
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
      return FileErrors.escape('a symbolic link is in the way; it is not followed');
    case 'EACCES':
    case 'EPERM':
      return Errors.forbidden('permission denied');
    case 'ENOSPC':
    case 'EDQUOT':
      return FileErrors.noSpace();
  }
  return e;
}

/** `<stem> copy<ext>`, then `<stem> copy 2<ext>`, ...; folders get `<name> copy`, `<name> copy 2`. */
export function copyName(name: string, isDir: boolean, n: number): string {
  const ext = isDir ? '' : extname(name);
  const stem = name.slice(0, name.length - ext.length);
  return `${stem} copy${n > 1 ? ` ${n}` : ''}${ext}`;
}

/**
 * Copy `src` (walked, links followed) beside `place` (walked, not followed: the name the client
 * gave), handed to `owner`. Returns the copy's workspace-relative path.
 */
export async function copyBeside(src: Entry, place: Entry, owner?: Owner): Promise<string> {
  if (place.name === null) throw Errors.invalid(['path'], 'the workspace root cannot be copied');
  const isDir = src.name === null || (await statEntry(src)).isDirectory();
  for (let n = 1; n < 10000; n++) {
    const candidate = copyName(place.name, isDir, n);
    const dest = at(place.dir, candidate);
    if (await exists(dest)) continue;
    try {
      await copyEntry(src, dest, owner);
    } catch (e) {
      // Another request took the name between the check and the copy: try the next one.
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw e;
    }
    const dir = posix.dirname(place.rel);
    return dir === '.' ? candidate : `${dir}/${candidate}`;
  }
  throw Errors.conflict('ALREADY_EXISTS', 'too many copies');
}
