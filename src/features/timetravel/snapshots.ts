import { join } from 'node:path';
import { EMPTY_SIGNATURE, EXCLUDED_DIRS, gitMode, scanFolder, settled, statKey, type BlobCache, type Skipped } from './scan.js';
import { spawner } from './spawner.js';
import { SessionFolder } from '../../core/files/confine.js';
import type { StorageQuota } from '../../core/files/quota.js';
import { readSessionTree, writeSessionTree, type TreeWriteFolder } from '../../core/files/tree-sync.js';
import { blobLoader, newDir, type TargetDir } from './restore-plan.js';
import { keepPack, makeStoreFolder, packLayers, removePack, removeStore, storeExists, writeObject } from './object-store.js';

/**
 * Workspace snapshots in a shadow git directory per session, outside the workspace
 * (`<workspaces>/.snapshots/<user>/<session>.git`, never visible to a sandbox): one tree per
 * checkpoint, content-addressed, so unchanged files cost nothing and changes made by any tool
 * (Bash included) are caught. The session folder is only ever read and written through the
 * confined layer (files/tree-sync.ts: descriptors, no link followed, a link kept as a link); git
 * only ever sees the store (objects written here, trees listed and blobs read from it). Heavy
 * folders are excluded; files over the size limit are listed as skipped, never silently lost.
 */

export interface Snapshot {
  tree: string;
  files: number;
  skipped: Skipped[];
}

export interface SnapshotOptions {
  /** Files larger than this are skipped (AGENTSVC_SNAPSHOT_FILE_LIMIT). */
  fileLimit: number;
  /** At most this many files in one snapshot; the rest are skipped. */
  maxFiles?: number;
  timeoutMs?: number;
  /** The service's storage quota: what a restore writes counts against it (quota.ts). */
  quota?: StorageQuota;
}

/** Git's empty tree: known to every git without being stored. */
export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/** Loose objects a snapshot store may hold before they are packed at once. */
const LOOSE_LIMIT = 64;
/** Otherwise what is loose is packed this long after a session's last snapshot (it went idle). */
const IDLE_PACK_MS = 2000;

/** An open pack this large is kept (never rewritten); see pack(). */
const KEEP_PACK_BYTES = 8 * 1024 * 1024;

/** Store settings: never prune, never gc on its own; deltas for files up to 128 KiB. */
const STORE_CONFIG: [string, string][] = [
  ['gc.auto', '0'],
  ['gc.pruneExpire', 'never'],
  ['core.bigFileThreshold', '128k'],
  ['pack.threads', '1'],
  // Bitmaps speed up reachability walks from refs; the store has no refs.
  ['repack.writeBitmaps', 'false'],
];

/** Blob cache entries kept over all stores (about 150 bytes each). */
const CACHE_ENTRIES = 200_000;
/** Tree ids remembered per store before the set starts over. */
const KNOWN_TREES = 50_000;
const GIT_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C' };

export class Snapshots {
  private packing = new Map<string, Promise<void>>();
  private packAgain = new Set<string>();
  /** The last snapshot of each store and the workspace signature it was taken at (bounded). */
  private last = new Map<string, { signature: string; snapshot: Snapshot }>();
  private idleTimers = new Map<string, NodeJS.Timeout>();
  /** Per store: the blob of each file as last seen (an unchanged file is not read again), bounded. */
  private caches = new Map<string, BlobCache>();
  /** Per store: tree ids known to be stored (a tree already packed is not written loose again). */
  private trees = new Map<string, Set<string>>();
  /** Per store: loose objects written since the last pack. */
  private loose = new Map<string, number>();

  constructor(
    private readonly root: string,
    private readonly opts: SnapshotOptions,
  ) {}

  private gitDir(userId: string, sessionId: string) {
    return join(this.root, '.snapshots', userId, `${sessionId}.git`);
  }

  private git(gitDir: string, args: string[], opts: { input?: string; binary?: boolean } = {}): Promise<string> {
    const base = ['-c', 'safe.directory=*', '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', `--git-dir=${gitDir}`];
    return new Promise((resolve, reject) => {
      // Through the helper process: forking the service itself stalls its event loop (spawner.ts).
      spawner.execFile('git', [...base, ...args], { env: GIT_ENV, maxBuffer: 256 * 1024 * 1024, timeout: this.opts.timeoutMs ?? 120_000, cwd: '/', ...opts }, (e, out, err) =>
        e ? reject(new Error(`git ${args[0]}: ${String(err).trim() || e.message}`)) : resolve(out),
      );
    });
  }

  private async ensure(gitDir: string) {
    if (await storeExists(gitDir)) return;
    await makeStoreFolder(join(this.root, '.snapshots'));
    await makeStoreFolder(gitDir);
    await this.git(gitDir, ['init', '-q', '--bare']);
    for (const [k, v] of STORE_CONFIG) await this.git(gitDir, ['config', k, v]);
  }

  /**
   * Git keeps each version of a file whole until it packs, so an edited file would cost its full
   * size at every checkpoint. Packing keeps layers by bytes: loose objects and the one open (not
   * kept) pack are repacked into one pack, where the versions of a file are deltas against each
   * other (git deltas only within a pack: two open packs would hold two whole copies); an open pack
   * that reaches KEEP_PACK_BYTES, or a quarter of the kept ones together, gets a `.keep` file and is
   * never rewritten again (so the first snapshot of a large workspace is written once, not rolled
   * up with every few kilobytes of edits). No ref names anything, so everything is kept whatever
   * its reachability: nothing is lost.
   */
  private async pack(gitDir: string) {
    this.loose.delete(gitDir);
    const m = /^count: (\d+)/m.exec(await this.git(gitDir, ['count-objects', '-v']));
    const before = await packLayers(gitDir);
    if (Number(m?.[1] ?? 0) < 1 && before.open.length <= 1) return;
    // No ref names anything, so `repack -a` would find nothing to pack: every object (those of kept
    // packs left out) is listed and packed, then the open packs it replaces and the loose copies go.
    // Objects written meanwhile are not listed and stay loose for the next pack.
    const ids = await this.git(gitDir, ['cat-file', '--batch-all-objects', '--batch-check=%(objectname)']);
    const settings = STORE_CONFIG.flatMap(([k, v]) => ['-c', `${k}=${v}`]);
    const made = (await this.git(gitDir, [...settings, 'pack-objects', '--honor-pack-keep', '--window=10', '--delta-base-offset', '-q', join(gitDir, 'objects', 'pack', 'pack')], { input: ids })).trim();
    if (!/^[0-9a-f]{40}$/.test(made)) throw new Error(`pack-objects: no pack made (${made.slice(0, 100)})`);
    for (const p of before.open) if (p.name !== `pack-${made}`) await removePack(gitDir, p.name);
    await this.git(gitDir, ['prune-packed']);
    const after = await packLayers(gitDir);
    for (const p of after.open) if (p.size >= Math.max(KEEP_PACK_BYTES, after.keptBytes / 4)) await keepPack(gitDir, p.name);
  }

  /**
   * Pack in the background (one at a time per store; a checkpoint never waits for it). Asked while
   * one runs, another follows it (what was written meanwhile is not in the running one).
   */
  private startPack(gitDir: string): Promise<void> {
    const timer = this.idleTimers.get(gitDir);
    if (timer) clearTimeout(timer);
    this.idleTimers.delete(gitDir);
    const running = this.packing.get(gitDir);
    if (running) {
      this.packAgain.add(gitDir);
      return running;
    }
    const p = this.pack(gitDir)
      .catch(() => {})
      .finally(() => {
        this.packing.delete(gitDir);
        if (this.packAgain.delete(gitDir)) void this.startPack(gitDir);
      });
    this.packing.set(gitDir, p);
    return p;
  }

  /** Pack what is loose once the session has made no snapshot for IDLE_PACK_MS. */
  private packWhenIdle(gitDir: string) {
    const old = this.idleTimers.get(gitDir);
    if (old) clearTimeout(old);
    const timer = setTimeout(() => void this.startPack(gitDir), IDLE_PACK_MS);
    timer.unref();
    this.idleTimers.set(gitDir, timer);
  }

  /** A deleted session's snapshots go with it. */
  async remove(userId: string, sessionId: string): Promise<void> {
    const gitDir = this.gitDir(userId, sessionId);
    clearTimeout(this.idleTimers.get(gitDir));
    this.idleTimers.delete(gitDir);
    this.forget(gitDir);
    await this.packing.get(gitDir);
    await removeStore(gitDir);
  }

  /** Pack whatever is loose now, without waiting for the session to go idle. */
  async packNow(userId: string, sessionId: string): Promise<void> {
    await this.idle();
    await this.startPack(this.gitDir(userId, sessionId));
  }

  /** At shutdown: packs that wait for an idle session are dropped (the next snapshot schedules them), running ones finish. */
  async close(): Promise<void> {
    for (const t of this.idleTimers.values()) clearTimeout(t);
    this.idleTimers.clear();
    while (this.packing.size) await Promise.all(this.packing.values());
  }

  /** Resolves when no packing runs or waits to run (benchmarks, shutdown): waiting packs start now. */
  async idle(): Promise<void> {
    for (const gitDir of [...this.idleTimers.keys()]) void this.startPack(gitDir);
    while (this.packing.size) await Promise.all(this.packing.values());
  }

  /** Forget what is held in memory for a store. */
  private forget(gitDir: string) {
    this.packAgain.delete(gitDir);
    this.last.delete(gitDir);
    this.caches.delete(gitDir);
    this.trees.delete(gitDir);
    this.loose.delete(gitDir);
  }

  /** Keep a store's blob cache, most recent last; the least recent stores' caches go past CACHE_ENTRIES in all. */
  private keepCache(gitDir: string, cache: BlobCache) {
    this.caches.delete(gitDir);
    this.caches.set(gitDir, cache);
    let total = 0;
    for (const c of this.caches.values()) total += c.size;
    for (const [k, c] of this.caches) {
      if (total <= CACHE_ENTRIES || k === gitDir) break;
      total -= c.size;
      this.caches.delete(k);
    }
  }

  /** Store the trees of a snapshot that are not known to be stored; returns how many were written loose. */
  private async writeTrees(gitDir: string, trees: [string, Buffer][]): Promise<number> {
    let known = this.trees.get(gitDir);
    if (!known || known.size > KNOWN_TREES) this.trees.set(gitDir, (known = new Set()));
    let written = 0;
    for (const [id, body] of trees) {
      if (known.has(id)) continue;
      if ((await writeObject(gitDir, 'tree', body, id)).written) written++;
      known.add(id);
    }
    return written;
  }

  /**
   * The session folder is empty or missing now (a hint by path, synchronous: SessionFolder's): its
   * snapshot is the empty tree, known without a store.
   */
  emptyNow(userId: string, sessionId: string): boolean {
    return SessionFolder.of(this.root, userId, sessionId).emptyOrMissing();
  }

  /**
   * Record the session folder's files now. The folder is walked through descriptors; a file whose
   * size, inode and times are unchanged since the last snapshot keeps its blob without being read,
   * others are read and written to the store as loose objects, then the trees. An unchanged
   * workspace (same signature as the last snapshot) gives the same tree without writing anything,
   * and an empty one the empty tree without a store.
   */
  async take(userId: string, sessionId: string): Promise<Snapshot> {
    const gitDir = this.gitDir(userId, sessionId);
    // A session that never had a file (most first messages), told without opening and verifying
    // the folder chain (about a quarter of a run start's CPU): see SessionFolder's hints.
    if (this.emptyNow(userId, sessionId)) return this.remember(gitDir, EMPTY_SIGNATURE, { tree: EMPTY_TREE, files: 0, skipped: [] });
    await this.ensure(gitDir);
    let loose = 0;
    const writeBlob = async (data: Uint8Array) => {
      const r = await writeObject(gitDir, 'blob', data);
      if (r.written) loose++;
      return r.id;
    };
    const cache = this.caches.get(gitDir) ?? new Map();
    const scanned = await readSessionTree(this.root, userId, sessionId, (top) => scanFolder(top, { ...this.opts, cache, writeBlob }));
    if (!scanned) return this.remember(gitDir, EMPTY_SIGNATURE, { tree: EMPTY_TREE, files: 0, skipped: [] });
    this.keepCache(gitDir, scanned.cache);
    const { skipped, signature } = scanned;
    const prev = this.last.get(gitDir);
    if (!scanned.racy && prev && prev.signature === signature) return { ...prev.snapshot, skipped: [...prev.snapshot.skipped] };
    if (scanned.tree) loose += await this.writeTrees(gitDir, scanned.trees);
    const total = (this.loose.get(gitDir) ?? 0) + loose;
    this.loose.set(gitDir, total);
    // In the background: a checkpoint never waits for it (a repack keeps what is written meanwhile loose).
    // Objects written while a pack runs are not in it: the idle pack takes them.
    if (total >= LOOSE_LIMIT) void this.startPack(gitDir);
    if (loose) this.packWhenIdle(gitDir);
    const snapshot = { tree: scanned.tree ?? EMPTY_TREE, files: scanned.files, skipped };
    // A file that changed under the walk, or just before it, may look unchanged next time: no shortcut then.
    if (scanned.racy) {
      this.last.delete(gitDir);
      return snapshot;
    }
    return this.remember(gitDir, signature, snapshot);
  }

  private remember(gitDir: string, signature: string, snapshot: Snapshot): Snapshot {
    this.last.delete(gitDir);
    if (this.last.size >= 10_000) this.last.delete(this.last.keys().next().value!);
    this.last.set(gitDir, { signature, snapshot: { ...snapshot, skipped: [...snapshot.skipped] } });
    return snapshot;
  }

  /** Blobs by id from the store (`git cat-file --batch`). */
  private async blobs(gitDir: string, ids: string[]): Promise<Map<string, Buffer>> {
    const out = Buffer.from(await this.git(gitDir, ['cat-file', '--batch'], { input: `${ids.join('\n')}\n`, binary: true }), 'base64');
    const got = new Map<string, Buffer>();
    for (let p = 0; p < out.length; ) {
      const eol = out.indexOf(10, p);
      const [id, type, size] = out.subarray(p, eol).toString().split(' ');
      if (type !== 'blob') throw new Error(`checkpoint store: object ${id} is ${type ?? 'missing'}`);
      const start = eol + 1;
      got.set(id, out.subarray(start, start + Number(size)));
      p = start + Number(size) + 1;
    }
    return got;
  }

  /**
   * Make the session folder hold exactly `tree` (excluded folders and files over the size limit
   * are left as they are). The tree is read from the store; the folder is written through the
   * confined layer: atomic writes, links made as links, whatever stands in the way replaced and
   * never followed. A file whose size, inode and times match the blob cache for the same blob is
   * left alone. Restored entries belong to the folder's owner (the sandbox user). Returns the count.
   */
  async restore(userId: string, sessionId: string, tree: string): Promise<number> {
    const gitDir = this.gitDir(userId, sessionId);
    this.last.delete(gitDir);
    await this.ensure(gitDir);
    const target = newDir();
    let count = 0;
    if (tree !== EMPTY_TREE) {
      for (const line of (await this.git(gitDir, ['ls-tree', '-r', '-l', '-z', tree])).split('\0')) {
        const tab = line.indexOf('\t');
        if (tab < 0) continue;
        const [mode, type, id, size] = line.slice(0, tab).trim().split(/\s+/);
        if (type !== 'blob') continue;
        const parts = line.slice(tab + 1).split('/');
        let dir = target;
        for (const part of parts.slice(0, -1)) {
          let next = dir.dirs.get(part);
          if (!next) dir.dirs.set(part, (next = newDir()));
          dir = next;
        }
        dir.blobs.set(parts[parts.length - 1], { mode, id, size: Number(size) || 0 });
        count++;
      }
    }
    const cache = this.caches.get(gitDir) ?? new Map();
    // The blobs the cache does not already place at their path, in the order they are written,
    // fetched in batches (a file changed since it was cached is fetched alone).
    const needed: { id: string; size: number }[] = [];
    const plan = (node: TargetDir, rel: string) => {
      for (const [name, dir] of node.dirs) plan(dir, rel ? `${rel}/${name}` : name);
      for (const [name, blob] of node.blobs) if (blob.mode === '120000' || cache.get(rel ? `${rel}/${name}` : name)?.id !== blob.id) needed.push(blob);
    };
    plan(target, '');
    const loader = blobLoader((ids) => this.blobs(gitDir, ids), needed);
    const next: BlobCache = new Map(cache);
    await writeSessionTree(this.root, userId, sessionId, this.opts.quota, (top) => this.sync(top, '', target, { cache, next, loader }));
    this.keepCache(gitDir, next);
    return count;
  }

  /** One folder of a restore: removes what the tree lacks and writes what differs. */
  private async sync(w: TreeWriteFolder, rel: string, node: TargetDir, run: { cache: BlobCache; next: BlobCache; loader: (id: string) => Promise<Buffer> }): Promise<void> {
    const current = new Map((await w.entries()).map((e) => [e.name, e.st]));
    const pathOf = (name: string) => (rel ? `${rel}/${name}` : name);
    for (const [name, st] of current) {
      if (node.dirs.has(name) || node.blobs.has(name)) continue;
      run.next.delete(pathOf(name));
      if (st.isDirectory()) {
        if (EXCLUDED_DIRS.includes(name)) continue;
        // Emptied of what may go, then removed if nothing is left (heavy folders, big files stay).
        await w.folder(name, (sub) => this.sync(sub, pathOf(name), newDir(), run));
        await w.removeIfEmpty(name);
      } else if (!(st.isFile() && st.size > BigInt(this.opts.fileLimit))) await w.remove(name);
    }
    for (const [name, dir] of node.dirs) await w.folder(name, (sub) => this.sync(sub, pathOf(name), dir, run));
    for (const [name, blob] of node.blobs) {
      const path = pathOf(name);
      const st = current.get(name);
      const hit = run.cache.get(path);
      if (st && blob.mode !== '120000' && gitMode(st) === blob.mode && hit?.id === blob.id && hit.key === statKey(st)) continue;
      const data = await run.loader(blob.id);
      run.next.delete(path);
      if (blob.mode === '120000') await w.symlink(name, data.toString());
      else {
        const written = await w.writeFile(name, data, blob.mode === '100755' ? 0o755 : 0o644);
        if (settled(written)) run.next.set(path, { key: statKey(written), id: blob.id });
      }
    }
  }

  /** The files of a snapshot, with sizes. */
  async files(userId: string, sessionId: string, tree: string): Promise<{ path: string; size: number }[]> {
    if (tree === EMPTY_TREE) return [];
    const out = await this.git(this.gitDir(userId, sessionId), ['ls-tree', '-r', '-l', '-z', tree]);
    return out
      .split('\0')
      .filter(Boolean)
      .map((line) => {
        const [meta, path] = line.split('\t');
        const size = Number(meta.trim().split(/\s+/)[3]);
        return { path, size: Number.isFinite(size) ? size : 0 };
      });
  }
}
