import { mkdir, readdir, rm, stat, lchown, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EMPTY_SIGNATURE, EXCLUDED_DIRS, scanWorkspace, type Scanned, type Skipped } from './scan.js';
import { spawner } from './spawner.js';
import { SessionFolder, type OpenSession } from '../files/confine.js';

/**
 * Workspace snapshots in a shadow git directory per session, outside the workspace
 * (`<workspaces>/.snapshots/<user>/<session>.git`, never visible to a sandbox): one tree per
 * checkpoint, content-addressed, so unchanged files cost nothing and changes made by any tool
 * (Bash included) are caught. Git works on the verified session folder through its open descriptor
 * (`/proc/<pid>/fd/<n>`), so a link put in place of the folder is never followed. Heavy folders are
 * excluded; files over the size limit are listed as skipped, never silently lost.
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
}

/**
 * Prints the tree, its file count, the loose object count, and (last) what `add` could not read.
 * No ref is written: the checkpoints table names every tree, and the store never prunes (gc is off
 * and packing rolls up objects whatever their reachability), so a ref per snapshot (~100 bytes in
 * packed-refs, more than a small edit) would only cost.
 */
const SNAPSHOT_SCRIPT = `err=$(git add -A --ignore-errors . 2>&1 >/dev/null) || true
tree=$(git write-tree) || exit 1
echo "$tree"
git ls-tree -r --name-only -z "$tree" | tr -cd '\\000' | wc -c
git count-objects -v | sed -n 's/^count: //p'
printf '%s' "$err" | tr '\\n' ' '`;

/** Git's empty tree: known to every git without being stored. */
export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/** Loose objects a snapshot store may hold before they are packed at once. */
const LOOSE_LIMIT = 64;
/** Otherwise what is loose is packed this long after a session's last snapshot (it went idle). */
const IDLE_PACK_MS = 2000;

/** An open pack this large is kept (never rewritten); see pack(). */
const KEEP_PACK_BYTES = 8 * 1024 * 1024;

/** The packs of a store: the bytes of the kept ones, and the open ones (name without .pack, size). */
async function packLayers(dir: string): Promise<{ keptBytes: number; open: { name: string; size: number }[] }> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const kept = new Set(names.filter((n) => n.endsWith('.keep')).map((n) => n.slice(0, -'.keep'.length)));
  let keptBytes = 0;
  const open: { name: string; size: number }[] = [];
  for (const n of names.filter((x) => x.endsWith('.pack'))) {
    const name = n.slice(0, -'.pack'.length);
    const size = await stat(join(dir, n)).then((st) => st.size, () => 0);
    if (kept.has(name)) keptBytes += size;
    else open.push({ name, size });
  }
  return { keptBytes, open };
}

/** Store settings: never prune, never gc on its own; deltas for files up to 128 KiB. */
const STORE_CONFIG: [string, string][] = [
  ['gc.auto', '0'],
  ['gc.pruneExpire', 'never'],
  ['core.bigFileThreshold', '128k'],
  ['pack.threads', '1'],
  // Bitmaps speed up reachability walks from refs; the store has no refs.
  ['repack.writeBitmaps', 'false'],
];

const GIT_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C' };

export class Snapshots {
  private packing = new Map<string, Promise<void>>();
  /** The last snapshot of each store and the workspace signature it was taken at (bounded). */
  private last = new Map<string, { signature: string; snapshot: Snapshot }>();
  private idleTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly root: string,
    private readonly opts: SnapshotOptions,
  ) {}

  private gitDir(userId: string, sessionId: string) {
    return join(this.root, '.snapshots', userId, `${sessionId}.git`);
  }

  private git(gitDir: string, workTree: string | null, args: string[], input?: string): Promise<string> {
    const base = ['-c', 'safe.directory=*', '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'core.autocrlf=false', '-c', 'core.symlinks=true', `--git-dir=${gitDir}`];
    if (workTree) base.push(`--work-tree=${workTree}`);
    return new Promise((resolve, reject) => {
      // Through the helper process: forking the service itself stalls its event loop (spawner.ts).
      spawner.execFile('git', [...base, ...args], { env: GIT_ENV, maxBuffer: 256 * 1024 * 1024, timeout: this.opts.timeoutMs ?? 120_000, cwd: workTree ?? '/', input }, (e, out, err) =>
        e ? reject(new Error(`git ${args[0]}: ${String(err).trim() || e.message}`)) : resolve(out),
      );
    });
  }

  /** A short sh script with GIT_DIR / GIT_WORK_TREE set (paths never pass through the shell). */
  private shell(gitDir: string, workTree: string, script: string): Promise<string> {
    const config = Object.entries({ 'safe.directory': '*', 'core.hooksPath': '/dev/null', 'core.fsmonitor': 'false', 'core.autocrlf': 'false', 'core.symlinks': 'true' });
    const env: NodeJS.ProcessEnv = { ...GIT_ENV, GIT_DIR: gitDir, GIT_WORK_TREE: workTree, GIT_CONFIG_COUNT: String(config.length) };
    config.forEach(([k, v], i) => {
      env[`GIT_CONFIG_KEY_${i}`] = k;
      env[`GIT_CONFIG_VALUE_${i}`] = v;
    });
    return new Promise((resolve, reject) => {
      spawner.execFile('sh', ['-c', script], { env, cwd: workTree, maxBuffer: 16 * 1024 * 1024, timeout: this.opts.timeoutMs ?? 120_000 }, (e, out, err) =>
        e ? reject(new Error(`snapshot: ${String(err).trim() || e.message}`)) : resolve(out),
      );
    });
  }

  private async ensure(gitDir: string) {
    try {
      await stat(join(gitDir, 'HEAD'));
    } catch {
      await mkdir(join(this.root, '.snapshots'), { recursive: true, mode: 0o700 });
      await mkdir(gitDir, { recursive: true, mode: 0o700 });
      await this.git(gitDir, null, ['init', '-q', '--bare']);
      for (const [k, v] of STORE_CONFIG) await this.git(gitDir, null, ['config', k, v]);
    }
  }

  /**
   * What `git add -A` needs before it runs (a snapshot and a restore alike): our excludes written,
   * nested repositories' files and the files the workspace's .gitignore hides staged.
   */
  private async stage(gitDir: string, wt: string, scanned: Pick<Scanned, 'skipped' | 'gitignores' | 'inNested'>) {
    await this.excludes(gitDir, scanned.skipped);
    await this.addNested(gitDir, wt, scanned.inNested, scanned.skipped);
    if (scanned.gitignores) await this.addIgnored(gitDir, wt, scanned.skipped);
  }

  /**
   * A folder holding its own repository (a clone, a `git init` in a subfolder) is, to `git add`, an
   * embedded repository: one link, none of its files (or an error when it has no commit). Its files
   * are staged by path instead; from then on they are tracked like any other. Only when such a
   * folder exists.
   */
  private async addNested(gitDir: string, wt: string, paths: string[], skipped: Skipped[]) {
    if (!paths.length) return;
    await this.git(gitDir, wt, ['update-index', '--add', '--replace', '-z', '--stdin'], `${paths.join('\0')}\0`).catch((e: Error) => {
      skipped.push({ path: '*', size: 0, reason: `some files in nested repositories could not be read: ${e.message.slice(0, 400)}` });
    });
  }

  /**
   * The workspace's own .gitignore files hide files from `git add -A`, but a checkpoint keeps every
   * file (a rewind must bring back build output and logs too): the files they hide are added with
   * -f, except ours to leave out (heavy folders, skipped files). Only when a .gitignore exists.
   */
  private async addIgnored(gitDir: string, wt: string, skipped: Skipped[]) {
    const listed = await this.git(gitDir, wt, ['ls-files', '-z', '--others', '--ignored', '--directory', '--exclude-per-directory=.gitignore']);
    const heavy = (p: string) => p.split('/').some((part) => EXCLUDED_DIRS.includes(part));
    const paths = listed.split('\0').filter((p) => p && !heavy(p.replace(/\/$/, '')));
    if (!paths.length) return;
    const specs = [
      ...paths.map((p) => `:(literal)${p}`),
      ...EXCLUDED_DIRS.map((d) => `:(exclude,glob)**/${d}/**`),
      ...skipped.map((x) => `:(exclude,literal)${x.path}`),
    ];
    await this.git(gitDir, wt, ['add', '-f', '--ignore-errors', '--pathspec-from-file=-', '--pathspec-file-nul'], specs.join('\0')).catch((e: Error) => {
      skipped.push({ path: '*', size: 0, reason: `some files hidden by .gitignore could not be read: ${e.message.slice(0, 400)}` });
    });
  }

  /** Exclude heavy folders and the skipped files (gitignore syntax, each path anchored and escaped). */
  private async excludes(gitDir: string, skipped: Skipped[]) {
    const esc = (p: string) => `/${p.replace(/[\\*?[\]!# ]/g, (c) => `\\${c}`)}`;
    const lines = [...EXCLUDED_DIRS.map((d) => `${d}/`), ...skipped.map((s) => esc(s.path))];
    await mkdir(join(gitDir, 'info'), { recursive: true });
    await writeFile(join(gitDir, 'info', 'exclude'), `${lines.join('\n')}\n`);
  }

  private folder(userId: string, sessionId: string) {
    return SessionFolder.of(this.root, userId, sessionId);
  }

  private static tree(s: OpenSession) {
    return `/proc/${process.pid}/fd/${s.fh.fd}`;
  }

  /**
   * Git keeps each version of a file whole until it packs, so an edited file would cost its full
   * size at every checkpoint. Packing keeps layers by bytes: loose objects and the one open (not
   * kept) pack are repacked into one pack, where the versions of a file are deltas against each
   * other (git deltas only within a pack: two open packs would hold two whole copies); an open pack
   * that reaches KEEP_PACK_BYTES, or a quarter of the kept ones together, gets a `.keep` file and is
   * never rewritten again (so the first snapshot of a large workspace is written once, not rolled
   * up with every few kilobytes of edits). No ref names anything, so everything is kept whatever
   * its reachability (`--keep-unreachable`): nothing is lost.
   */
  private async pack(gitDir: string) {
    const dir = join(gitDir, 'objects', 'pack');
    const m = /^count: (\d+)/m.exec(await this.git(gitDir, null, ['count-objects', '-v']));
    if (Number(m?.[1] ?? 0) < 1 && (await packLayers(dir)).open.length <= 1) return;
    const settings = STORE_CONFIG.flatMap(([k, v]) => ['-c', `${k}=${v}`]);
    await this.git(gitDir, null, [...settings, 'repack', '-a', '-d', '-q', '--keep-unreachable', '--window=10']);
    const after = await packLayers(dir);
    for (const p of after.open) if (p.size >= Math.max(KEEP_PACK_BYTES, after.keptBytes / 4)) await writeFile(join(dir, `${p.name}.keep`), '');
  }

  /** Pack in the background (one at a time per store; a checkpoint never waits for it). */
  private startPack(gitDir: string): Promise<void> {
    const timer = this.idleTimers.get(gitDir);
    if (timer) clearTimeout(timer);
    this.idleTimers.delete(gitDir);
    const running = this.packing.get(gitDir);
    if (running) return running;
    const p = this.pack(gitDir)
      .catch(() => {})
      .finally(() => this.packing.delete(gitDir));
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
    this.last.delete(gitDir);
    await this.packing.get(gitDir);
    await rm(gitDir, { recursive: true, force: true });
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

  /**
   * Record the session folder's files now: the index follows the folder, one tree object. An
   * unchanged workspace (same signature as the last snapshot) gives the same tree without a
   * process, and an empty one the empty tree without a store.
   */
  async take(userId: string, sessionId: string): Promise<Snapshot> {
    const gitDir = this.gitDir(userId, sessionId);
    const folder = this.folder(userId, sessionId);
    // A session that never had a file (most first messages), told without opening and verifying
    // the folder chain (about a quarter of a run start's CPU): see SessionFolder's hints.
    if (await folder.emptyOrMissing()) return this.remember(gitDir, EMPTY_SIGNATURE, { tree: EMPTY_TREE, files: 0, skipped: [] });
    return folder.with(async (s) => {
      const wt = Snapshots.tree(s);
      const { skipped, signature, entries, gitignores, inNested } = await scanWorkspace(wt, this.opts);
      const prev = this.last.get(gitDir);
      if (prev && prev.signature === signature) return { ...prev.snapshot, skipped: [...prev.snapshot.skipped] };
      if (entries === 0) return this.remember(gitDir, signature, { tree: EMPTY_TREE, files: 0, skipped });
      await this.ensure(gitDir);
      await this.stage(gitDir, wt, { skipped, gitignores, inNested });
      // One process for the whole snapshot (through the helper, spawner.ts): add, write the tree,
      // count its files and loose objects.
      const out = await this.shell(gitDir, wt, SNAPSHOT_SCRIPT);
      const [tree, files, loose, addError] = out.split('\n');
      if (!/^[0-9a-f]{40}$/.test(tree ?? '')) throw new Error(`git snapshot failed: ${out.slice(0, 300)}`);
      if (addError) skipped.push({ path: '*', size: 0, reason: `some files could not be read: ${addError.slice(0, 400)}` });
      // In the background: a checkpoint never waits for it (git's locks order it with the next add).
      if (Number(loose) >= LOOSE_LIMIT) void this.startPack(gitDir);
      else this.packWhenIdle(gitDir);
      const snapshot = { tree, files: Number(files) || 0, skipped };
      // A file that could not be read may be readable next time: no shortcut then.
      return addError ? snapshot : this.remember(gitDir, signature, snapshot);
    });
  }

  private remember(gitDir: string, signature: string, snapshot: Snapshot): Snapshot {
    this.last.delete(gitDir);
    if (this.last.size >= 10_000) this.last.delete(this.last.keys().next().value!);
    this.last.set(gitDir, { signature, snapshot: { ...snapshot, skipped: [...snapshot.skipped] } });
    return snapshot;
  }

  /**
   * Make the session folder hold exactly `tree` (excluded folders and skipped files are left as
   * they are). Restored files belong to the folder's owner (the sandbox user). Returns their count.
   */
  async restore(userId: string, sessionId: string, tree: string): Promise<number> {
    const gitDir = this.gitDir(userId, sessionId);
    this.last.delete(gitDir);
    await this.ensure(gitDir);
    return this.folder(userId, sessionId).with(async (s) => {
      const wt = Snapshots.tree(s);
      // The index first follows the folder as it is now, so files made since are removed too.
      await this.stage(gitDir, wt, await scanWorkspace(wt, this.opts));
      await this.git(gitDir, wt, ['add', '-A', '--ignore-errors', '.']).catch(() => {});
      await this.git(gitDir, wt, ['read-tree', '-u', '--reset', tree]);
      const paths = (await this.git(gitDir, null, ['ls-tree', '-r', '--name-only', '-z', tree])).split('\0').filter(Boolean);
      const owner = await s.fh.stat();
      if (process.getuid?.() === 0 && owner.uid !== 0) {
        const dirs = new Set<string>();
        for (const p of paths) {
          const parts = p.split('/');
          for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
        }
        for (const p of [...dirs, ...paths]) await lchown(join(wt, p), owner.uid, owner.gid).catch(() => {});
      }
      return paths.length;
    });
  }

  /** The files of a snapshot, with sizes. */
  async files(userId: string, sessionId: string, tree: string): Promise<{ path: string; size: number }[]> {
    if (tree === EMPTY_TREE) return [];
    const out = await this.git(this.gitDir(userId, sessionId), null, ['ls-tree', '-r', '-l', '-z', tree]);
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
