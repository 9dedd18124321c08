/**
 * `agentsvc backup`: the whole install into one archive (archive.ts), while `up` may be running.
 * The rows come from one REPEATABLE READ transaction, so every table is as of the same instant.
 * The files are read after that instant (the snapshot is taken before the first file is opened),
 * while the rows are still being copied: checkpoint stores are append-only (a checkpoint row
 * always finds its tree), and a session created meanwhile leaves only a folder without rows,
 * which nothing serves. The database's COPY runs in its own process, so packing the files
 * meanwhile takes the rows' time off the backup's (they were a third of it).
 */
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import type { Client } from 'pg';
import { ConfigError, type Config } from '../../platform/config/index.js';
import { EmbeddedStartError, startEmbeddedPostgres } from '../../platform/db/embedded.js';
import { readFolderTree, readUserTree, type TreeEntry } from '../../core/files/tree-io.js';
import { asset } from '../../platform/lib/assets.js';
import { ArchiveWriter, DB_PIECE, FORMAT, FORMAT_VERSION, HOME_FILES, HOME_FOLDERS, MANIFEST, type Manifest, SNAPSHOTS, TRAILER, type Trailer, USER_FOLDER } from './archive.js';
import { appliedMigrations, beginSnapshot, connect, copyOut, listTables, readSequences, type TableInfo } from './table-copy.js';

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
  // Not zeroed beforehand (a GiB of memset): only the part of a file that shrank meanwhile is.
  const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - at));
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await fh.read(buf, got, buf.length - got, at + got);
    if (!bytesRead) break;
    got += bytesRead;
  }
  buf.fill(0, got);
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
async function addTree(w: ArchiveWriter, prefix: string, entries: AsyncIterable<TreeEntry>, after: () => void | Promise<void>): Promise<void> {
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
      await after();
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

/** The database a backup reads: joined (or started) without the ORM, which a COPY does not need and which took 0.7 s to load. */
async function openSource(config: Config): Promise<{ connect(): ReturnType<typeof connect>; close(): Promise<void> }> {
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(config.home, { role: 'cli' });
  const url = embedded?.url ?? config.databaseUrl!;
  return {
    connect: () =>
      connect(url).catch((e) => {
        const why = (e as Error).message;
        throw embedded ? new EmbeddedStartError(`cannot connect to it: ${why}`, join(config.home, 'logs', 'postgres.log')) : new ConfigError('DATABASE_URL', `cannot connect to the database: ${why}`);
      }),
    close: async () => embedded?.stop(),
  };
}

/** A piece of a table's COPY text: whole rows. */
interface Piece {
  table: string;
  chunks: Buffer[];
  size: number;
}

/**
 * Every table's COPY text, in load order, as pieces of whole rows of about DB_PIECE bytes (an
 * empty table gives one empty piece, so a restore sees it). Counts each table's rows into `rows`.
 */
async function* tablePieces(c: Client, tables: TableInfo[], rows: Record<string, number>): AsyncGenerator<Piece> {
  for (const t of tables) {
    const table = t.name;
    rows[table] = 0;
    let chunks: Buffer[] = [];
    let size = 0;
    let pieces = 0;
    for await (const chunk of copyOut(c, t) as AsyncIterable<Buffer>) {
      // COPY text ends every row with a newline and escapes the ones inside values.
      let end = -1;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) {
        rows[table]++;
        end = i + 1;
      }
      if (size + chunk.byteLength < DB_PIECE || end === -1) {
        chunks.push(chunk);
        size += chunk.byteLength;
        continue;
      }
      chunks.push(chunk.subarray(0, end));
      yield { table, chunks, size: size + end };
      pieces++;
      chunks = end < chunk.byteLength ? [chunk.subarray(end)] : [];
      size = chunk.byteLength - end;
    }
    if (size || !pieces) yield { table, chunks, size };
  }
}

/**
 * Pulls `source` ahead of its consumer, holding at most `max` items (the database's COPY waits
 * meanwhile): the consumer takes what is ready between its own steps, or waits for more.
 */
class ReadAhead<T> {
  private readonly ready: T[] = [];
  private ended = false;
  private stopped = false;
  private failure: { error: unknown } | null = null;
  private wakeSource = () => {};
  private wakeConsumer = () => {};

  constructor(
    source: AsyncIterable<T>,
    private readonly max: number,
  ) {
    void this.pump(source);
  }

  private async pump(source: AsyncIterable<T>): Promise<void> {
    try {
      for await (const item of source) {
        this.ready.push(item);
        this.wakeConsumer();
        while (this.ready.length >= this.max && !this.stopped) await new Promise<void>((r) => (this.wakeSource = r));
        if (this.stopped) break;
      }
    } catch (error) {
      this.failure = { error };
    }
    this.ended = true;
    this.wakeConsumer();
  }

  /** What is ready now, possibly nothing. */
  take(): T[] {
    if (this.failure) throw this.failure.error;
    const items = this.ready.splice(0);
    this.wakeSource();
    return items;
  }

  /** The next items, waiting for them; none once the source is done. */
  async next(): Promise<T[]> {
    while (!this.ready.length && !this.ended) await new Promise<void>((r) => (this.wakeConsumer = r));
    return this.take();
  }

  /** The consumer gave up: the source is left where it is. */
  stop(): void {
    this.stopped = true;
    this.wakeSource();
  }
}

/** Pieces of COPY text held ahead of the archive (whole rows of about DB_PIECE bytes each). */
const PIECES_AHEAD = 2;

/** Writes the archive into `out` (the caller names and finishes the file); `progress` is told as it goes. */
export async function writeBackup(config: Config, out: NodeJS.WritableStream, progress: BackupProgress = () => {}): Promise<BackupResult> {
  const db = await openSource(config);
  const w = new ArchiveWriter();
  const piped = new Promise<void>((resolve, reject) => {
    w.pack.on('error', reject);
    out.on('error', reject);
    out.on('finish', resolve);
    w.pack.pipe(out as never);
  });
  piped.catch(() => {});
  const report = (phase: string) => progress({ phase, bytes: w.digest.bytes, entries: w.digest.entries });
  const rows: Record<string, number> = {};
  let users = 0;
  let manifest: Manifest;
  let pending: ReadAhead<Piece> | null = null;
  const numbered = new Map<string, number>();
  const addPieces = async (pieces: Piece[]) => {
    for (const p of pieces) {
      const n = (numbered.get(p.table) ?? 0) + 1;
      numbered.set(p.table, n);
      const name = `db/${p.table}/${String(n).padStart(6, '0')}`;
      await w.add({ name, type: 'file', mode: 0o600, mtime: new Date(), size: p.size }, p.chunks);
      report(`table ${p.table}`);
    }
  };
  /** After each file entry: the pieces of rows read meanwhile. */
  const between = (phase: string) => async () => {
    report(phase);
    await addPieces(pending!.take());
  };
  const work = (async () => {
    const c = await db.connect();
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
      // The snapshot is taken: from here on the rows are copied while the files are read.
      pending = new ReadAhead(tablePieces(c, tables, rows), PIECES_AHEAD);
      await w.json(MANIFEST, manifest);
      await addTree(w, 'home', homeFiles(config.home), () => report('config'));
      await addTree(w, 'snapshots', readFolderTree(join(config.workspaces, SNAPSHOTS)), between('checkpoints'));
      for (const id of await userIds(config.workspaces)) {
        users++;
        await addTree(w, `users/${id}`, readUserTree(config.workspaces, id), between(`files of ${id}`));
      }
      for (let pieces = await pending.next(); pieces.length; pieces = await pending.next()) await addPieces(pieces);
      await c.query('commit');
    } finally {
      pending?.stop();
      await c.end().catch(() => {});
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
