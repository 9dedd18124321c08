/**
 * The path rules of the confined file layer (src/core/files/confine.ts): what a client's or the
 * model's path means inside a session folder, its errors, and the synchronous resolution the tool
 * policy checks with (SessionFolder.resolveNow).
 */
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { join, posix } from 'node:path';

/** As the kernel: more links than this on one path is a loop. */
export const MAX_LINKS = 40;
/** Bound on resolveNow's steps (folders and links' parts): it blocks the event loop. */
const MAX_NOW_STEPS = 128;

/** A path that would leave the session folder: 422 on REST, a tool error for tools. */
export class PathEscapeError extends Error {
  readonly code: string = 'PATH_OUTSIDE_WORKSPACE';
}

/** A symlink whose target does not exist: never followed, never written through. */
export class DanglingLinkError extends PathEscapeError {
  override readonly code = 'DANGLING_SYMLINK';
}

/** The user or session folder is not a real directory at its place (e.g. a planted symlink). */
export class NotAFolderError extends Error {
  readonly code = 'WORKSPACE_NOT_A_DIRECTORY';
}

/** The components of a path relative to the session folder; throws for `..` out of it. */
export function relativeComponents(rel: string, shown: string): string[] {
  const normal = posix.normalize(rel === '' ? '.' : rel).replace(/\/+$/, '');
  if (normal === '..' || normal.startsWith('../')) throw new PathEscapeError(`${shown} is outside the workspace`);
  return normal === '.' || normal === '' ? [] : normal.split('/');
}

/**
 * The workspace-relative components of a path a client or the model gave; an absolute path must
 * name the folder as the host or the computer sees it (`roots`). Throws for a path out of it.
 */
export function pathComponents(path: string, roots: (string | undefined)[]): string[] {
  if (typeof path !== 'string' || path.includes('\0')) throw new PathEscapeError('invalid path');
  const p = path.replace(/\\/g, '/');
  if (!p.startsWith('/')) return relativeComponents(p, path);
  const normal = posix.normalize(p);
  for (const root of roots) {
    if (!root) continue;
    if (normal === root) return [];
    if (normal.startsWith(root.endsWith('/') ? root : `${root}/`)) return relativeComponents(normal.slice(root.length).replace(/^\/+/, ''), path);
  }
  throw new PathEscapeError(`${path} is outside the workspace`);
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
/** Where a folder is, as SessionFolder (confine.ts) knows it. */
export interface FolderPlace {
  base: string;
  user: string;
  session: string | null;
  hostDir: string;
  computerDir?: string;
}

export function resolveNow(folder: FolderPlace, path: string): string | null {
  try {
    let base = folder.base;
    let missing = false;
    try {
      base = realpathSync.native(base);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return null;
      missing = true;
    }
    const real = folder.session === null ? join(base, folder.user) : join(base, folder.user, folder.session);
    // The user and session folders as open() verifies them: real folders (missing: made empty).
    for (const dir of folder.session === null ? [real] : [join(base, folder.user), real]) {
      const st = missing ? undefined : lstatSync(dir, { throwIfNoEntry: false });
      if (!st) missing = true;
      else if (!st.isDirectory()) return null;
    }
    const roots = [folder.hostDir, real, folder.computerDir];
    let todo = pathComponents(path, roots).map((name) => ({ name, linked: false }));
    const stack: string[] = [];
    let links = 0;
    for (let steps = 0; todo.length; steps++) {
      // Each lstat walks the host path again: bounded, the event loop waits a few hundred at most.
      if (steps > MAX_NOW_STEPS) return null;
      const { name, linked } = todo.shift()!;
      if (name === '' || name === '.') continue;
      if (name === '..') {
        if (!stack.pop()) return null;
        continue;
      }
      const host = `${real}/${stack.length ? `${stack.join('/')}/` : ''}${name}`;
      const st = missing ? undefined : lstatSync(host, { throwIfNoEntry: false });
      if (st?.isSymbolicLink()) {
        if (++links > MAX_LINKS) return null;
        const target = readlinkSync(host);
        if (target.startsWith('/')) stack.length = 0;
        todo = [...(target.startsWith('/') ? pathComponents(target, roots) : target.split('/')).map((n) => ({ name: n, linked: true })), ...todo];
        continue;
      }
      if (!st && linked) return null; // a dangling link
      stack.push(name);
      // Missing, or a file with more after it: the rest as given (the tool fails on a file).
      if (!st || (!st.isDirectory() && todo.length)) return todo.some((t) => t.linked) ? null : [...stack, ...todo.map((t) => t.name)].join('/');
    }
    return stack.join('/');
  } catch {
    return null;
  }
}
