/**
 * `agentsvc backup`: the whole install into one archive (archive.ts), while `up` may be running.
 * The rows come from one REPEATABLE READ transaction, so every table is as of the same instant.
 * Files follow the rows: checkpoint stores are append-only (a checkpoint row always finds its
 * tree), and a session created meanwhile leaves only a folder without rows, which nothing serves.
 */
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import type { Config } from '../../platform/config/index.js';
import { openDatabase } from '../../platform/db/index.js';
import { readFolderTree, readUserTree, type TreeEntry } from '../../core/files/tree-io.js';
import { asset } from '../../platform/lib/assets.js';
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
/** Entries opened and read ahead of the one being written (at most a chunk each is held). */
const AHEAD = 4;

/** An entry ready to be written: a file is open with its first chunk being read. */
interface Prepared {
  entry: TreeEntry;
  file?: { fh: FileHandle; size: number; first: Promise<Uint8Array> };
}

const readChunk = async (fh: FileHandle, at: number, size: number): Promise<Uint8Array> => {
  // Zeroed: the part of a file that shrank meanwhile reads as zeros.
  const buf = new Uint8Array(Math.min(CHUNK, size - at));
  await fh.read(buf, 0, buf.length, at);
  return buf;
};

async function prepare(entry: TreeEntry): Promise<Prepared | null> {
  if (entry.type !== 'file') return { entry };
  const fh = await entry.open!().catch(() => null);
  if (!fh) return null; // gone or replaced meanwhile
  const { size } = await fh.stat();
  const first = readChunk(fh, 0, size);
  first.catch(() => {}); // awaited when written; the failure reaches add() then
  return { entry, file: { fh, size, first } };
}

/**
 * Exactly `size` bytes of an open file: a file that grew is cut, one that shrank meanwhile is
 * padded with zeros (tar needs the size announced). The next chunk is read while this one is written.
 */
async function* fileChunks(fh: FileHandle, size: number, first: Promise<Uint8Array>): AsyncGenerator<Uint8Array> {
  let next: Promise<Uint8Array> | null = first;
  try {
    for (let at = 0; next; ) {
      const chunk: Uint8Array = await next;
      at += chunk.byteLength;
      next = at < size ? readChunk(fh, at, size) : null;
      yield chunk;
    }
  } finally {
    next?.catch(() => {}); // a read still under way when the consumer stopped
  }
}

/**
 * The entries of a tree into the archive, in order. Up to AHEAD entries are opened and their first
 * chunk read while the current one is written: most files are a chunk or less, and reading them
 * one at a time after each write left the disk and the checksum waiting on each other.
 */
async function addTree(w: ArchiveWriter, prefix: string, entries: AsyncIterable<TreeEntry>, tick: () => void): Promise<void> {
  const it = entries[Symbol.asyncIterator]();
  const window: Promise<Prepared | null>[] = [];
  let more = true;
  const fill = async () => {
    while (more && window.length < AHEAD) {
      const r = await it.next();
      if (r.done) more = false;
      else {
        const p = prepare(r.value);
        p.catch(() => {});
        window.push(p);
      }
    }
  };
  try {
    for (await fill(); window.length; await fill()) {
      const p = await window.shift()!;
      if (!p) continue;
      const { entry: e, file } = p;
      const base = { name: `${prefix}/${e.rel}`, mode: e.mode, mtime: e.mtime };
      if (e.type === 'directory') await w.add({ ...base, type: 'directory' });
      else if (e.type === 'symlink') await w.add({ ...base, type: 'symlink', linkname: e.linkname });
      else if (file) {
        try {
          await w.add({ ...base, type: 'file', size: file.size }, fileChunks(file.fh, file.size, file.first));
        } finally {
          await file.fh.close();
        }
      }
      tick();
    }
  } finally {
    // Stopped by a failure: close what was opened ahead.
    for (const p of window.splice(0)) await p.then((x) => x?.file?.fh.close(), () => {});
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
    const trailer: Trailer = { entries: w.digest.entries, bytes: w.digest.bytes, sha256: w.digest.digest(), rows };
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
