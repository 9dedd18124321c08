/**
 * The trust boundary's file layer: every host-side read, write, listing, copy, rename or removal in
 * a user's tree (a session folder, or the user's computer home) goes through here. Each operation
 * opens the verified folder chain (confine.ts), walks the path one component at a time through
 * descriptors without following links out, acts on the final entry through its parent's
 * descriptor, and closes everything. Writes are atomic (entry-ops.ts replaceFile); ownership is
 * only ever changed through a descriptor. Nothing here hands a host path to its caller.
 */
import { mkdir, rename } from 'node:fs/promises';
import type { Entry, OpenSession, SessionFolder } from './confine.js';
import { copyEntry, listDir, type ListedEntry, openDir, openRead, type Owner, removeEntry, statEntry, writeWhole } from './entry-ops.js';

export type { ListedEntry, Owner };

export interface EntryInfo {
  type: 'file' | 'directory' | 'other';
  size: number;
  mtimeMs: number;
}

/** A user's tree as host code may touch it. Paths are relative to the tree (or absolute inside it). */
export interface FolderFs {
  /** A regular file's bytes; over `maxBytes` (default 1 MiB) throws with code EFBIG. */
  read(path: string, maxBytes?: number): Promise<Buffer>;
  /** Replace (or create) a file atomically, making its folders; `executable` gives mode 0755. */
  write(path: string, data: string | Uint8Array, opts?: { executable?: boolean }): Promise<{ created: boolean }>;
  /** Make a folder and its parents (nothing when it exists). */
  mkdir(path: string): Promise<void>;
  /** A folder's entries, folders first; [] when the path is a file. */
  list(path: string): Promise<ListedEntry[]>;
  /** What is at `path` (links inside the tree followed); null when nothing is. */
  stat(path: string): Promise<EntryInfo | null>;
  /** Rename an entry (the entry itself, a link is not followed); the target's folders are made. */
  rename(from: string, to: string): Promise<void>;
  /** Copy a file or folder tree to `to`, which must not exist. */
  copy(from: string, to: string): Promise<void>;
  /** Remove a file, a link (the link only) or a folder tree; nothing when missing. */
  remove(path: string): Promise<void>;
}

const isMissing = (e: unknown) => (e as NodeJS.ErrnoException).code === 'ENOENT';

async function using<T>(s: OpenSession, path: string, opts: Parameters<OpenSession['walk']>[1], fn: (e: Entry) => Promise<T>): Promise<T> {
  const e = await s.walk(path, opts);
  try {
    return await fn(e);
  } finally {
    await e.close();
  }
}

/** The confined file layer over one folder (session or home); new entries go to `owner`. */
export function confinedFs(folder: SessionFolder, owner?: Owner): FolderFs {
  const inFolder = <T>(fn: (s: OpenSession) => Promise<T>) => folder.with(fn);
  return {
    read: (path, maxBytes = 1024 * 1024) =>
      inFolder((s) =>
        using(s, path, { follow: true }, async (e) => {
          const fh = await openRead(e);
          try {
            const { size } = await fh.stat();
            if (size > maxBytes) throw Object.assign(new Error(`${path} is ${size} bytes, over ${maxBytes}`), { code: 'EFBIG' });
            return await fh.readFile();
          } finally {
            await fh.close();
          }
        }),
      ),
    write: (path, data, opts = {}) =>
      inFolder((s) =>
        using(s, path, { follow: true, mkdirs: true, owner }, (e) => writeWhole(e, data, { owner, mode: opts.executable ? 0o755 : undefined })),
      ),
    mkdir: (path) =>
      inFolder((s) =>
        using(s, path, { follow: true, mkdirs: true, owner }, async (e) => {
          if (e.name === null) return;
          const made = await mkdir(e.path).then(
            () => true,
            (err) => {
              if (err.code !== 'EEXIST') throw err;
              return false;
            },
          );
          // Opened as a real folder (O_NOFOLLOW): a link or file standing there is refused.
          const d = await openDir(e);
          try {
            if (made && owner) await d.fh.chown(owner.uid, owner.gid);
          } finally {
            await d.close();
          }
        }),
      ),
    list: async (path) => {
      // A run start lists folders that mostly do not exist: a plain lstat says so without opening
      // the chain. Only a hint: whatever it finds is listed through the confined walk.
      if (folder.lacks(path)) throw Object.assign(new Error(`${path}: no such file or directory`), { code: 'ENOENT' });
      return inFolder((s) => using(s, path, { follow: true }, async (e) => ((await statEntry(e)).isDirectory() ? listDir(s, e) : [])));
    },
    stat: (path) =>
      inFolder((s) =>
        using(s, path, { follow: true }, async (e) => {
          const st = await statEntry(e);
          return { type: st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other', size: st.size, mtimeMs: st.mtimeMs } as EntryInfo;
        }),
      ).catch((e) => {
        if (isMissing(e)) return null;
        throw e;
      }),
    rename: (from, to) =>
      inFolder((s) =>
        using(s, from, {}, (src) => {
          if (src.rel === '') throw new Error('the folder root cannot be renamed');
          return using(s, to, { mkdirs: true, owner }, (dest) => rename(src.path, dest.path));
        }),
      ),
    copy: (from, to) => inFolder((s) => using(s, from, { follow: true }, (src) => using(s, to, { mkdirs: true, owner }, (dest) => copyEntry(src, dest.path, owner)))),
    remove: (path) =>
      inFolder(async (s) => {
        const e = await s.walk(path).catch((err) => {
          if (isMissing(err)) return null;
          throw err;
        });
        if (!e) return;
        try {
          if (e.rel === '') throw new Error('the folder root cannot be removed');
          await removeEntry(e.path).catch((err) => {
            if (!isMissing(err)) throw err;
          });
        } finally {
          await e.close();
        }
      }),
  };
}
