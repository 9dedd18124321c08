/**
 * A user's whole tree as a backup reads it and a restore writes it, through the confined layer:
 * folders are opened O_DIRECTORY|O_NOFOLLOW through their parent's descriptor, links are reported
 * and re-created as links (never followed), files are opened O_NOFOLLOW and checked to be regular.
 * FIFOs, sockets and devices are left out. Writing walks each entry's parent with the confined
 * walk, so a link in the archive (or one planted meanwhile) can never lead a write out of the tree.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, symlink, type FileHandle } from 'node:fs/promises';
import { at, PathEscapeError, SessionFolder } from './confine.js';
import { errno } from './entry-ops.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

export interface TreeEntry {
  /** Path relative to the user's folder, '/'-separated. */
  rel: string;
  type: 'file' | 'directory' | 'symlink';
  mode: number;
  mtime: Date;
  /** Bytes of a file (0 otherwise). */
  size: number;
  /** A link's target, as stored. */
  linkname?: string;
  /** A file's content, opened through its folder's descriptor (regular files only). Close it. */
  open?: () => Promise<FileHandle>;
}

/** Every entry of a user's folder, each folder before what it holds; nothing when the folder is absent. */
export async function* readUserTree(root: string, userId: string): AsyncGenerator<TreeEntry> {
  const opened = await SessionFolder.home(root, userId).open(false);
  if (!opened) return;
  try {
    yield* readFolder(opened.fh, '');
  } finally {
    await opened.close();
  }
}

async function* readFolder(dir: FileHandle, rel: string): AsyncGenerator<TreeEntry> {
  const names = (await readdir(at(dir))).sort();
  for (const name of names) {
    const path = at(dir, name);
    const st = await lstat(path).catch(() => null);
    if (!st) continue; // removed meanwhile
    const r = rel ? `${rel}/${name}` : name;
    const base = { rel: r, mode: st.mode & 0o7777, mtime: st.mtime };
    if (st.isSymbolicLink()) {
      const linkname = await readlink(path).catch(() => null);
      if (linkname !== null) yield { ...base, type: 'symlink', size: 0, linkname };
    } else if (st.isFile()) {
      yield { ...base, type: 'file', size: st.size, open: () => openRegular(path) };
    } else if (st.isDirectory()) {
      const sub = await open(path, DIR_FLAGS).catch(() => null);
      if (!sub) continue; // swapped for something else meanwhile: not followed
      try {
        yield { ...base, type: 'directory', size: 0 };
        yield* readFolder(sub, r);
      } finally {
        await sub.close();
      }
    }
  }
}

async function openRegular(path: string): Promise<FileHandle> {
  const fh = await open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  const st = await fh.stat();
  if (st.isFile()) return fh;
  await fh.close();
  throw errno('ENXIO', 'no longer a regular file');
}

/** Checks a relative path from an archive: plain names only (no '', '.', '..', absolute). */
export function archivePath(rel: string): string[] {
  const parts = rel.split('/');
  if (!rel || rel.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\0'))) {
    throw new PathEscapeError(`${JSON.stringify(rel)} is not a plain relative path`);
  }
  return parts;
}

export interface TreeWriter {
  directory(rel: string, mode: number): Promise<void>;
  /** A new file (it must not exist) filled from `content`. */
  file(rel: string, mode: number, mtime: Date, content: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<void>;
  symlink(rel: string, target: string): Promise<void>;
}

/** Writes entries into a user's folder (made when missing), each through a confined walk of its parent. */
export function writeUserTree(root: string, userId: string): TreeWriter {
  const folder = SessionFolder.home(root, userId);
  const inParent = <T>(rel: string, fn: (dir: FileHandle, name: string) => Promise<T>) => {
    const parts = archivePath(rel);
    const name = parts.pop()!;
    return folder.with(async (s) => {
      const parent = await s.walk(parts.join('/'), { follow: true, mkdirs: true });
      try {
        const dir = parent.name === null ? parent.dir : await open(parent.path, DIR_FLAGS);
        try {
          return await fn(dir, name);
        } finally {
          if (dir !== parent.dir) await dir.close();
        }
      } finally {
        await parent.close();
      }
    });
  };
  return {
    directory: (rel, mode) =>
      inParent(rel, async (dir, name) => {
        await mkdir(at(dir, name), { mode: mode & 0o777 }).catch((e) => {
          if (e.code !== 'EEXIST') throw e;
        });
        // Its times change again as entries are written into it: only the mode is restored.
        const d = await open(at(dir, name), DIR_FLAGS);
        await d.chmod(mode & 0o7777).finally(() => d.close());
      }),
    file: (rel, mode, mtime, content) =>
      inParent(rel, async (dir, name) => {
        const fh = await open(at(dir, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, mode & 0o777);
        await fillFile(fh, mode, mtime, content).finally(() => fh.close());
      }),
    symlink: (rel, target) => inParent(rel, (dir, name) => symlink(target, at(dir, name))),
  };
}

/** Write `content` into a new open file, then give it `mode` and `mtime`. */
export async function fillFile(fh: FileHandle, mode: number, mtime: Date, content: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<void> {
  for await (const chunk of content) {
    for (let off = 0; off < chunk.byteLength; ) off += (await fh.write(chunk, off, chunk.byteLength - off)).bytesWritten;
  }
  await fh.chmod(mode & 0o7777);
  await fh.utimes(mtime, mtime);
}

/** Every entry below an operator's own folder (not a user's tree), read the same way; nothing when absent. */
export async function* readFolderTree(path: string): AsyncGenerator<TreeEntry> {
  const fh = await open(path, DIR_FLAGS).catch((e) => {
    if (e.code === 'ENOENT') return null;
    throw e;
  });
  if (!fh) return;
  try {
    yield* readFolder(fh, '');
  } finally {
    await fh.close();
  }
}
