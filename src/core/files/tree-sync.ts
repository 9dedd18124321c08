/**
 * A session folder as checkpoints read and rewind it, through the confined layer: every folder is
 * opened O_DIRECTORY|O_NOFOLLOW through its parent's descriptor, entries are lstat'ed and acted on
 * through that descriptor (`at(dir, name)`), files are opened O_NOFOLLOW and checked to be
 * regular, links are read as links and written as links. A folder swapped for a link at any moment
 * is never entered, read through or written through. Git's object format is the caller's
 * (timetravel/snapshots.ts); nothing here hands out a host path.
 */
import { randomBytes } from 'node:crypto';
import { constants, type BigIntStats } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, rename, rmdir, symlink, unlink, lchown, type FileHandle } from 'node:fs/promises';
import { at, SessionFolder } from './confine.js';
import { removeEntry, type Owner } from './entry-ops.js';
import { type Account, recordQuota, type StorageQuota } from './quota.js';

export type { BigIntStats };

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** lstat'ing a folder's entries: this many at a time. */
const PARALLEL = 32;

export interface FolderEntry {
  name: string;
  st: BigIntStats;
}

/** One open folder of the tree. Its handle stays valid only inside the callback that gave it. */
export interface TreeFolder {
  /** Its entries with their lstat (nothing that vanished meanwhile), in readdir order. */
  entries(): Promise<FolderEntry[]>;
  /** A regular file's bytes and fstat (of what was read); null when it is no longer a regular file or is over `maxBytes`. */
  read(name: string, maxBytes: number): Promise<{ data: Buffer; st: BigIntStats } | null>;
  /** A link's target as stored; null when it is no longer a link. */
  readLink(name: string): Promise<string | null>;
  /** Run `fn` in the real folder `name` (a link there is never entered: null). */
  folder<T>(name: string, fn: (f: TreeFolder) => Promise<T>): Promise<T | null>;
}

/** A folder being rewound: whatever stands in the way of what is written is replaced, never followed. */
export interface TreeWriteFolder extends TreeFolder {
  /** Replace `name` with a regular file (atomic: a new file renamed over the name); returns its fstat. */
  writeFile(name: string, data: Uint8Array, mode: number): Promise<BigIntStats>;
  /** Replace `name` with a link to `target`. */
  symlink(name: string, target: string): Promise<void>;
  /** Remove a file, a link (the link only) or a folder tree; nothing when missing. */
  remove(name: string): Promise<void>;
  /** Remove `name` if it is an empty folder (true when it went). */
  removeIfEmpty(name: string): Promise<boolean>;
  /** Run `fn` in folder `name`, made when missing; anything else standing there is removed first. */
  folder<T>(name: string, fn: (f: TreeWriteFolder) => Promise<T>): Promise<T | null>;
}

const missing = (e: unknown) => (e as NodeJS.ErrnoException).code === 'ENOENT';

function reader(dir: FileHandle): TreeFolder {
  return {
    async entries() {
      const names = await readdir(at(dir)).catch(() => [] as string[]);
      const out: FolderEntry[] = [];
      for (let i = 0; i < names.length; i += PARALLEL) {
        const chunk = names.slice(i, i + PARALLEL);
        const stats = await Promise.all(chunk.map((n) => lstat(at(dir, n), { bigint: true }).catch(() => null)));
        chunk.forEach((name, j) => {
          const st = stats[j];
          if (st) out.push({ name, st });
        });
      }
      return out;
    },
    async read(name, maxBytes) {
      const fh = await open(at(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(() => null);
      if (!fh) return null;
      try {
        const st = await fh.stat({ bigint: true });
        if (!st.isFile() || st.size > BigInt(maxBytes)) return null;
        return { data: await fh.readFile(), st };
      } finally {
        await fh.close();
      }
    },
    readLink: (name) => readlink(at(dir, name)).catch(() => null),
    folder: (name, fn) => inFolder(dir, name, (fh) => fn(reader(fh))),
  };
}

async function inFolder<T>(dir: FileHandle, name: string, fn: (fh: FileHandle) => Promise<T>): Promise<T | null> {
  const fh = await open(at(dir, name), DIR_FLAGS).catch(() => null);
  if (!fh) return null;
  try {
    return await fn(fh);
  } finally {
    await fh.close();
  }
}

function writer(dir: FileHandle, owner: Owner | undefined, account: Account | undefined): TreeWriteFolder {
  const current = (name: string) => lstat(at(dir, name)).catch((e) => (missing(e) ? null : Promise.reject(e)));
  return {
    ...reader(dir),
    async writeFile(name, data, mode) {
      const old = await current(name);
      if (old && !old.isFile()) await removeEntry(at(dir, name));
      const tmp = `.agentsvc-${randomBytes(8).toString('hex')}.tmp`;
      const fh = await open(at(dir, tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, mode);
      let st: BigIntStats;
      try {
        try {
          for (let off = 0; off < data.byteLength; ) off += (await fh.write(data, off, data.byteLength - off)).bytesWritten;
          await fh.chmod(mode);
          if (owner) await fh.chown(owner.uid, owner.gid);
          st = await fh.stat({ bigint: true });
        } finally {
          await fh.close();
        }
        // rename replaces the name and never follows it: a link planted meanwhile is replaced.
        await rename(at(dir, tmp), at(dir, name));
      } catch (e) {
        await unlink(at(dir, tmp)).catch(() => {});
        throw e;
      }
      recordQuota(account, data.byteLength - (old?.isFile() ? old.size : 0));
      return st;
    },
    async symlink(name, target) {
      if (await current(name)) await removeEntry(at(dir, name));
      await symlink(target, at(dir, name));
      // lchown: the link itself (its folder reached through the descriptor).
      if (owner) await lchown(at(dir, name), owner.uid, owner.gid).catch(() => {});
    },
    async remove(name) {
      await removeEntry(at(dir, name)).catch((e) => {
        if (!missing(e)) throw e;
      });
    },
    removeIfEmpty: (name) => rmdir(at(dir, name)).then(() => true, () => false),
    async folder(name, fn) {
      for (let attempt = 0; attempt < 3; attempt++) {
        const st = await current(name);
        if (st && !st.isDirectory()) await removeEntry(at(dir, name)).catch(() => {});
        const made = !st?.isDirectory() && (await mkdir(at(dir, name)).then(() => true, () => false));
        const fh = await open(at(dir, name), DIR_FLAGS).catch(() => null);
        if (!fh) continue; // swapped for something else meanwhile: look again
        try {
          if (made && owner) await fh.chown(owner.uid, owner.gid);
          return await fn(writer(fh, owner, account));
        } finally {
          await fh.close();
        }
      }
      throw Object.assign(new Error(`${name}: the folder keeps changing`), { code: 'EAGAIN' });
    },
  };
}

/** Read a session folder; null when it is missing (a link or file in its place throws, as confine.ts). */
export async function readSessionTree<T>(root: string, userId: string, sessionId: string, fn: (top: TreeFolder) => Promise<T>): Promise<T | null> {
  const s = await SessionFolder.of(root, userId, sessionId).open(false);
  if (!s) return null;
  try {
    return await fn(reader(s.fh));
  } finally {
    await s.close();
  }
}

/**
 * Rewrite a session folder (made when missing); new entries belong to the folder's owner when the
 * service runs as root. The bytes written are counted against `quota`, the service's (quota.ts).
 */
export async function writeSessionTree<T>(root: string, userId: string, sessionId: string, quota: StorageQuota | undefined, fn: (top: TreeWriteFolder) => Promise<T>): Promise<T> {
  const folder = SessionFolder.of(root, userId, sessionId, { quota });
  return folder.with(async (s) => {
    const st = await s.fh.stat();
    const owner = process.getuid?.() === 0 && st.uid !== 0 ? { uid: st.uid, gid: st.gid } : undefined;
    return fn(writer(s.fh, owner, folder.account));
  });
}
