/**
 * File operations on entries reached by a confined walk (confine.ts). Every call goes through the
 * descriptor of an open folder (`at()`), O_NOFOLLOW, and opens are O_NONBLOCK then fstat'ed, so a
 * link swapped in is not followed and a FIFO or device never blocks a libuv thread.
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lchown, lstat, mkdir, open, readdir, readlink, rename, rmdir, symlink, unlink, type FileHandle } from 'node:fs/promises';
import { at, type Entry, type OpenSession } from './confine.js';
import { checkQuota, recordQuota } from './quota.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** An errno-style error, so REST (fsError) and tools map it like the kernel's own. */
export function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, errno: -1 });
}

const notRegular = (isDir: boolean) => (isDir ? errno('EISDIR', 'the path is a directory, not a file') : errno('ENXIO', 'the path is not a regular file'));

/** fstat the opened file: only a regular file is kept. */
async function regularOnly(fh: FileHandle): Promise<FileHandle> {
  const st = await fh.stat();
  if (st.isFile()) return fh;
  await fh.close();
  throw notRegular(st.isDirectory());
}

/** Open a walked entry for reading: a regular file only. */
export async function openRead(e: Entry): Promise<FileHandle> {
  if (e.name === null) throw notRegular(true);
  return regularOnly(await open(e.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
}

/** A uid/gid new entries are handed to (the computer's user, when it is not the service's). */
export interface Owner {
  uid: number;
  gid: number;
}

export interface ReplaceOptions {
  /** Mode of a new file (default 0o666 less the umask); an existing file keeps its mode. */
  mode?: number;
  /** A new file is handed to this uid/gid (through its descriptor); an existing one keeps its owner. */
  owner?: Owner;
}

const runsAsRoot = process.getuid?.() === 0;

/**
 * Replace the walked entry's content atomically: `fill` writes a new file beside it (same folder,
 * created O_EXCL|O_NOFOLLOW through the folder's descriptor), which is renamed over the name
 * (synced first when it replaces a file). A failure at any point (a full disk, a refused write) removes the new file and
 * leaves the old content whole. rename replaces a name and never follows it, so a link planted
 * meanwhile is replaced, not written through.
 */
export async function replaceFile(e: Entry, fill: (fh: FileHandle) => Promise<void>, opts: ReplaceOptions = {}): Promise<{ created: boolean }> {
  if (e.name === null) throw notRegular(true);
  const old = await lstat(e.path).catch((err) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (old?.isSymbolicLink()) throw errno('ELOOP', 'a symbolic link is in the way; it is not followed');
  if (old && !old.isFile()) throw notRegular(old.isDirectory());
  const tmp = at(e.dir, `.agentsvc-${randomBytes(8).toString('hex')}.tmp`);
  const fh = await open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, opts.mode ?? 0o666);
  let size = 0;
  try {
    try {
      await fill(fh);
      // Before the new content takes the name: past the quota, the old file stays as it was.
      size = (await fh.stat()).size;
      await checkQuota(e.account, size, old?.size ?? 0);
      if (old) {
        await fh.chmod(old.mode & 0o7777);
        if (runsAsRoot) await fh.chown(old.uid, old.gid);
        // On the disk before it replaces the old content: after a power loss the name holds the old
        // file or the new one, never an empty one. A new name has no old content to lose, so it is
        // not synced (480 skill files: 0.5 s instead of 2-3 s here).
        await fh.sync();
      } else if (opts.owner) await fh.chown(opts.owner.uid, opts.owner.gid).catch(() => {});
    } finally {
      await fh.close();
    }
    await rename(tmp, e.path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  recordQuota(e.account, size - (old?.size ?? 0));
  return { created: !old };
}

/** Replace a file's content through a walked entry, atomically (replaceFile). */
export function writeWhole(e: Entry, content: string | Uint8Array, opts: ReplaceOptions = {}): Promise<{ created: boolean }> {
  return replaceFile(e, (fh) => fh.writeFile(content), opts);
}

/** Open a walked folder (the entry itself must be a real folder, not a link). Close it after. */
export async function openDir(e: Entry): Promise<{ fh: FileHandle; close(): Promise<void> }> {
  if (e.name === null) return { fh: e.dir, close: async () => {} };
  const fh = await open(e.path, DIR_FLAGS);
  return { fh, close: () => fh.close() };
}

/** lstat of a walked entry; the root is fstat'ed (lstat of `/proc/self/fd/N` would see the fd's link). */
export function statEntry(e: Entry): Promise<Stats> {
  return e.name === null ? e.dir.stat() : lstat(e.path);
}

export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

export interface ListedEntry {
  name: string;
  type: 'file' | 'directory';
  size?: number;
}

const byKindThenName = (a: ListedEntry, b: ListedEntry) =>
  a.type !== b.type ? (a.type === 'directory' ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

/**
 * One folder's entries, folders first, then by name (code point order). A symlink shows what it
 * points to when that is inside the workspace; one that leads out (or nowhere) shows as an empty
 * file, so nothing about the outside leaks.
 */
export async function listDir(s: OpenSession, e: Entry): Promise<ListedEntry[]> {
  const d = await openDir(e);
  try {
    const names = await readdir(at(d.fh));
    const out: ListedEntry[] = [];
    for (const name of names) {
      let st = await lstat(at(d.fh, name)).catch(() => null);
      if (!st) continue; // removed while listing
      if (st.isSymbolicLink()) {
        st = await s.walk(e.rel ? `${e.rel}/${name}` : name, { follow: true }).then(
          async (t) => statEntry(t).finally(() => t.close()),
          () => null,
        ).catch(() => null);
        if (!st) {
          out.push({ name, type: 'file', size: 0 });
          continue;
        }
      }
      out.push(st.isDirectory() ? { name, type: 'directory' } : { name, type: 'file', size: st.isFile() ? st.size : 0 });
    }
    return out.sort(byKindThenName);
  } finally {
    await d.close();
  }
}

/** rm -rf through descriptors: a folder swapped for a link mid-way is unlinked, never entered. */
async function removeTree(path: string): Promise<void> {
  const fh = await open(path, DIR_FLAGS);
  try {
    for (const name of await readdir(at(fh))) {
      const st = await lstat(at(fh, name)).catch(() => null);
      if (!st) continue;
      if (st.isDirectory()) {
        await removeTree(at(fh, name));
        await rmdir(at(fh, name));
      } else await unlink(at(fh, name));
    }
  } finally {
    await fh.close();
  }
}

/** Remove a file, a symlink (the link only) or a folder tree. */
export async function removeEntry(path: string): Promise<void> {
  const st = await lstat(path);
  if (!st.isDirectory()) return unlink(path);
  await removeTree(path);
  await rmdir(path);
}

/** Copy the content of one open file into another, in chunks (no stream: both stay open). */
export async function copyBytes(src: FileHandle, dest: FileHandle): Promise<void> {
  const buf = Buffer.alloc(256 * 1024);
  for (let pos = 0; ; ) {
    const { bytesRead } = await src.read(buf, 0, buf.length, pos);
    if (bytesRead === 0) return;
    for (let off = 0; off < bytesRead; ) off += (await dest.write(buf, off, bytesRead - off)).bytesWritten;
    pos += bytesRead;
  }
}

/** Copy one regular file to `dest` (which must not exist), mode and times kept, handed to `owner`. */
async function copyFileTo(src: FileHandle, dest: string, owner?: Owner): Promise<void> {
  const st = await src.stat();
  const out = await open(dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, st.mode & 0o777);
  try {
    if (owner) await out.chown(owner.uid, owner.gid);
    await copyBytes(src, out);
    await out.utimes(st.atime, st.mtime);
  } finally {
    await out.close();
  }
}

/**
 * Copy a folder tree through descriptors; links inside are copied as the same links, never
 * followed. Every entry made is handed to `owner` (a folder and a file through its descriptor, a
 * link by lchown through its folder's descriptor).
 */
async function copyTree(src: FileHandle, dest: string, owner?: Owner): Promise<void> {
  const st = await src.stat();
  await mkdir(dest, { mode: st.mode & 0o777 });
  const out = await open(dest, DIR_FLAGS);
  try {
    if (owner) await out.chown(owner.uid, owner.gid);
    for (const name of await readdir(at(src))) {
      const est = await lstat(at(src, name)).catch(() => null);
      if (!est) continue;
      if (est.isSymbolicLink()) {
        await symlink(await readlink(at(src, name)), at(out, name));
        if (owner) await lchown(at(out, name), owner.uid, owner.gid);
      } else if (est.isDirectory()) {
        const sub = await open(at(src, name), DIR_FLAGS);
        await copyTree(sub, at(out, name), owner).finally(() => sub.close());
      } else if (est.isFile()) {
        const f = await regularOnly(await open(at(src, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK)).catch(() => null);
        if (f) await copyFileTo(f, at(out, name), owner).finally(() => f.close());
      } // FIFOs, sockets: not copied
    }
  } finally {
    await out.close();
  }
}

/** Copy the walked (followed) entry `src` to `dest`, which must not exist (EEXIST otherwise); the copy is `owner`'s. */
export async function copyEntry(src: Entry, dest: string, owner?: Owner): Promise<void> {
  const st = await statEntry(src);
  if (st.isDirectory()) {
    const d = await openDir(src);
    await copyTree(d.fh, dest, owner).finally(() => d.close());
    return;
  }
  const f = await openRead(src);
  await copyFileTo(f, dest, owner).finally(() => f.close());
}
