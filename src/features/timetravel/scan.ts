import { createHash } from 'node:crypto';
import type { BigIntStats, TreeFolder } from '../../core/files/tree-sync.js';
import { objectId } from './object-store.js';

/** Folders that are rebuilt rather than restored: never walked, never removed by a rewind. */
export const EXCLUDED_DIRS = ['.git', 'node_modules', '.venv', 'venv', '__pycache__', '.cache', '.npm', '.mypy_cache', '.pytest_cache'];

export interface Skipped {
  path: string;
  size: number;
  reason: string;
}

/** What a file was when its blob was made: an unchanged file (same key) is not read again. */
export interface CachedBlob {
  key: string;
  id: string;
}

/** Per store: workspace-relative path -> the blob of the file or link last seen there. */
export type BlobCache = Map<string, CachedBlob>;

/** Size, inode, mtime and ctime in nanoseconds: a write or a chmod changes ctime, which no user sets. */
export const statKey = (st: BigIntStats) => `${st.size}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}`;

/**
 * A file changed this recently may change again within the file system clock's granularity (a few
 * milliseconds) without its times changing: it is neither cached nor trusted by the signature.
 */
const RACY_NS = 1_000_000_000n;
export const settled = (st: BigIntStats, nowNs = BigInt(Date.now()) * 1_000_000n) => nowNs - st.ctimeNs > RACY_NS && nowNs - st.mtimeNs > RACY_NS;

/** Git's mode of a file or link. */
export const gitMode = (st: BigIntStats) => (st.isSymbolicLink() ? '120000' : (st.mode & 0o100n) !== 0n ? '100755' : '100644');

export interface Scanned {
  /** The root tree's id; null when nothing was kept (no files, or all skipped). */
  tree: string | null;
  /** Tree objects to store (id, content), children before parents. */
  trees: [string, Buffer][];
  /** Files and links in the tree. */
  files: number;
  skipped: Skipped[];
  /** Path, type, size, inode, mtime and ctime of every file and link: equal signatures mean an unchanged workspace. */
  signature: string;
  /** The signature cannot be trusted: something changed under the walk or just before it. */
  racy: boolean;
  /** The blob cache as of this walk (paths that went are gone from it). */
  cache: BlobCache;
}

/** The signature of a folder with no entries. */
export const EMPTY_SIGNATURE = createHash('sha1').digest('hex');

interface TreeItem {
  name: string;
  mode: string;
  id: string;
}

/** Git orders a tree's entries by name, a folder's name compared as if it ended in '/'. */
const sortKey = (i: TreeItem) => Buffer.from(i.mode === '40000' ? `${i.name}/` : i.name);

export function treeObject(items: TreeItem[]): Buffer {
  const sorted = items.map((i) => ({ i, k: sortKey(i) })).sort((a, b) => Buffer.compare(a.k, b.k));
  return Buffer.concat(sorted.flatMap(({ i }) => [Buffer.from(`${i.mode} ${i.name}\0`), Buffer.from(i.id, 'hex')]));
}

/**
 * Walk the session folder (through the confined layer: no link is followed, a link is stored as a
 * link) and make its git trees. A file whose (size, inode, mtime, ctime) match the cache keeps its
 * blob without being read; any other is read through its descriptor and handed to `writeBlob`.
 * Heavy folders are not walked; files over `fileLimit` and past `maxFiles` are listed as skipped.
 */
export async function scanFolder(
  top: TreeFolder,
  opts: { fileLimit: number; maxFiles?: number; cache: BlobCache; writeBlob: (data: Uint8Array) => Promise<string> },
): Promise<Scanned> {
  const hash = createHash('sha1');
  const now = BigInt(Date.now()) * 1_000_000n;
  const out: Scanned = { tree: null, trees: [], files: 0, skipped: [], signature: '', racy: false, cache: new Map() };
  const max = opts.maxFiles ?? 100_000;
  let count = 0;
  const blobOf = async (f: TreeFolder, path: string, name: string, st: BigIntStats): Promise<string | null> => {
    const hit = opts.cache.get(path);
    if (hit && hit.key === statKey(st)) {
      out.cache.set(path, hit);
      return hit.id;
    }
    let data: Uint8Array;
    let seen = st;
    if (st.isSymbolicLink()) {
      const target = await f.readLink(name);
      if (target === null) return null;
      data = Buffer.from(target);
    } else {
      const read = await f.read(name, opts.fileLimit);
      if (!read) return null;
      ({ data, st: seen } = read);
    }
    const id = await opts.writeBlob(data);
    if (settled(seen, now) && statKey(seen) === statKey(st)) out.cache.set(path, { key: statKey(st), id });
    return id;
  };
  const walk = async (f: TreeFolder, rel: string): Promise<string | null> => {
    const items: TreeItem[] = [];
    for (const { name, st } of await f.entries()) {
      const path = rel ? `${rel}/${name}` : name;
      if (st.isDirectory()) {
        if (EXCLUDED_DIRS.includes(name)) continue;
        const sub = await f.folder(name, async (d) => ({ id: await walk(d, path) }));
        // No longer a folder (a link swapped in): not entered; the next checkpoint stores the link.
        if (!sub) out.racy = true;
        else if (sub.id) items.push({ name, mode: '40000', id: sub.id });
        continue;
      }
      if (!st.isFile() && !st.isSymbolicLink()) continue; // FIFOs, sockets, devices: not kept
      hash.update(`${path}\0${st.mode}:${st.size}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}\n`);
      if (!settled(st, now)) out.racy = true;
      if (st.isFile()) {
        const size = Number(st.size);
        if (size > opts.fileLimit) {
          out.skipped.push({ path, size, reason: `over the snapshot file limit of ${opts.fileLimit} bytes` });
          continue;
        }
        if (++count > max) {
          out.skipped.push({ path, size, reason: `over ${max} files in one snapshot` });
          continue;
        }
      }
      const id = await blobOf(f, path, name, st);
      if (id === null) {
        // Removed or replaced between the listing and the read: the next checkpoint sees it.
        out.racy = true;
        out.skipped.push({ path, size: Number(st.size), reason: 'could not be read as listed (changed while the checkpoint was taken, or unreadable)' });
        continue;
      }
      out.files++;
      items.push({ name, mode: gitMode(st), id });
    }
    if (!items.length) return null;
    const body = treeObject(items);
    const id = objectId('tree', body);
    out.trees.push([id, body]);
    return id;
  };
  out.tree = await walk(top, '');
  out.signature = hash.digest('hex');
  return out;
}
