/**
 * `agentsvc backup`: the whole install into one archive (archive.ts), while `up` may be running.
 * The rows come from one REPEATABLE READ transaction, so every table is as of the same instant.
 * Files follow the rows: checkpoint stores are append-only (a checkpoint row always finds its
 * tree), and a session created meanwhile leaves only a folder without rows, which nothing serves.
 */
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import type { Config } from '../config/index.js';
import { openDatabase } from '../db/index.js';
import { readFolderTree, readUserTree, type TreeEntry } from '../files/tree-io.js';
import { asset } from '../lib/assets.js';
import type { ParallelDigest } from './parallel-digest.js';
import { ArchiveWriter, DB_PIECE, FORMAT, FORMAT_VERSION, MANIFEST, type Manifest, TRAILER, type Trailer } from './archive.js';
import { appliedMigrations, beginSnapshot, connect, copyOut, listTables, readSequences } from './table-copy.js';

/** Operator files of AGENTSVC_HOME that make up the install (logs, run state and the database folder do not). */
export const HOME_FILES = ['config.json', 'admin.key'];
export const HOME_FOLDERS = ['frontend_config', 'skills', 'solutions'];
/** Checkpoint stores under the workspaces root (timetravel/snapshots.ts). */
export const SNAPSHOTS = '.snapshots';
/** A user's folder under the workspaces root: the names SessionFolder accepts, not our own dot folders. */
const USER_FOLDER = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

export type BackupProgress = (s: { phase: string; bytes: number; entries: number }) => void;

export interface BackupResult {
  entries: number;
  bytes: number;
  rows: Record<string, number>;
  tables: number;
  users: number;
  migrations: number;
}

const CHUNK = 1024 * 1024;
/** Chunks read and hashed ahead of the one being written. */
const AHEAD = 3;

/**
 * Exactly `size` bytes of an open file, hashed: a file that grew is cut, one that shrank meanwhile
 * is padded (tar needs the size announced). Up to AHEAD chunks are read and hashed (on the digest's
 * worker) while the caller writes the current one; reads run one at a time, so hashing keeps order.
 */
async function* fileChunks(fh: FileHandle, size: number, digest: ParallelDigest): AsyncGenerator<Uint8Array> {
  const queue: Promise<Uint8Array>[] = [];
  let pos = 0;
  let reading: Promise<void> = Promise.resolve();
  const readNext = () => {
    const at = pos;
    const want = Math.min(CHUNK, size - at);
    pos += want;
    const read = reading.then(async () => {
      // Zeroed: the part of a file that shrank meanwhile reads as zeros.
      const buf = new Uint8Array(want);
      await fh.read(buf, 0, want, at);
      return buf;
    });
    queue.push(read.then((buf) => digest.move(buf))); // before the next read starts: hashed in order
    reading = read.then(
      () => {},
      () => {}, // the failure reaches the caller through the queue
    );
  };
  try {
    while (pos < size && queue.length < AHEAD) readNext();
    while (queue.length) {
      const chunk = await queue.shift()!;
      if (pos < size) readNext();
      yield chunk;
    }
  } finally {
    for (const q of queue) q.catch(() => {}); // reads still under way when the consumer stopped
  }
}

async function addTree(w: ArchiveWriter, prefix: string, entries: AsyncIterable<TreeEntry>, tick: () => void): Promise<void> {
  for await (const e of entries) {
    const name = `${prefix}/${e.rel}`;
    const base = { name, mode: e.mode, mtime: e.mtime };
    if (e.type === 'directory') await w.add({ ...base, type: 'directory' });
    else if (e.type === 'symlink') await w.add({ ...base, type: 'symlink', linkname: e.linkname });
    else {
      const fh = await e.open!().catch(() => null);
      if (!fh) continue; // gone or replaced meanwhile
      try {
        const { size } = await fh.stat();
        await w.add({ ...base, type: 'file', size }, fileChunks(fh, size, w.digest), true);
      } finally {
        await fh.close();
      }
    }
    tick();
  }
}

async function* homeFiles(home: string): AsyncGenerator<TreeEntry> {
  for (const name of HOME_FILES) {
    const fh = await open(join(home, name), 'r').catch(() => null);
    if (!fh) continue;
    const st = await fh.stat();
    await fh.close();
    if (st.isFile()) yield { rel: name, type: 'file', mode: st.mode & 0o7777, mtime: st.mtime, size: st.size, open: () => open(join(home, name), 'r') };
  }
  for (const folder of HOME_FOLDERS) {
    for await (const e of readFolderTree(join(home, folder))) yield { ...e, rel: `${folder}/${e.rel}` };
  }
}

async function userIds(root: string): Promise<string[]> {
  const names = await readdir(root, { withFileTypes: true }).catch(() => []);
  return names.filter((d) => d.isDirectory() && USER_FOLDER.test(d.name)).map((d) => d.name).sort();
}

/** Writes the archive into `out` (the caller names and finishes the file); `progress` is told as it goes. */
export async function writeBackup(config: Config, out: NodeJS.WritableStream, progress: BackupProgress = () => {}): Promise<BackupResult> {
  const db = await openDatabase(config, { poolMax: 1, role: 'cli' });
  const w = new ArchiveWriter();
  const piped = new Promise<void>((resolve, reject) => {
    w.pack.on('error', reject);
    out.on('error', reject);
    out.on('finish', resolve);
    w.pack.pipe(out as never);
  });
  piped.catch(() => {});
  const tick = (phase: string) => () => progress({ phase, bytes: w.digest.bytes, entries: w.digest.entries });
  const rows: Record<string, number> = {};
  let users = 0;
  let manifest: Manifest;
  const work = (async () => {
    const c = await connect(db.url);
    try {
      await beginSnapshot(c);
      const tables = await listTables(c);
      manifest = {
        format: FORMAT,
        version: FORMAT_VERSION,
        created_at: new Date().toISOString(),
        agentsvc_version: JSON.parse(asset('package.json')).version,
        server_version: (await c.query('show server_version')).rows[0].server_version,
        migrations: await appliedMigrations(c),
        tables,
        sequences: await readSequences(c),
      };
      await w.json(MANIFEST, manifest);
      await addTree(w, 'home', homeFiles(config.home), tick('config'));
      for (const t of tables) {
        rows[t.name] = await addTable(w, t.name, copyOut(c, t), tick(`table ${t.name}`));
      }
      await c.query('commit');
    } finally {
      await c.end().catch(() => {});
    }
    await addTree(w, 'snapshots', readFolderTree(join(config.workspaces, SNAPSHOTS)), tick('checkpoints'));
    for (const id of await userIds(config.workspaces)) {
      users++;
      await addTree(w, `users/${id}`, readUserTree(config.workspaces, id), tick(`files of ${id}`));
    }
    const trailer: Trailer = { entries: w.digest.entries, bytes: w.digest.bytes, sha256: await w.digest.digest(), rows };
    await w.json(TRAILER, trailer);
    w.finish();
  })();
  try {
    // Either side failing ends both: a full disk stops the reads, a read error ends the file.
    const failed = work.catch((e) => {
      w.pack.destroy(e);
      throw e;
    });
    await Promise.all([failed, piped]);
  } finally {
    await w.digest.close();
    await db.close();
  }
  return { entries: w.digest.entries, bytes: w.digest.bytes, rows, tables: manifest!.tables.length, users, migrations: manifest!.migrations.length };
}

/** A table's COPY text as pieces of at most DB_PIECE bytes (cut anywhere: a restore joins them). Returns its rows. */
async function addTable(w: ArchiveWriter, table: string, copy: NodeJS.ReadableStream, tick: () => void): Promise<number> {
  let piece: Buffer[] = [];
  let size = 0;
  let n = 0;
  let lines = 0;
  const flush = async () => {
    n++;
    await w.add({ name: `db/${table}/${String(n).padStart(6, '0')}`, type: 'file', mode: 0o600, mtime: new Date() }, Buffer.concat(piece, size));
    piece = [];
    size = 0;
    tick();
  };
  for await (const chunk of copy as AsyncIterable<Buffer>) {
    // COPY text ends every row with a newline and escapes the ones inside values.
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
    piece.push(chunk);
    size += chunk.byteLength;
    if (size >= DB_PIECE) await flush();
  }
  if (size || n === 0) await flush();
  return lines;
}
