/**
 * The backup archive: a tar (gzip-compressed when the file name ends in .gz or .tgz) written and
 * read as a stream with tar-stream, so nothing is staged on disk and memory stays bounded whatever
 * the install's size. Its entries, in order:
 *   agentsvc-backup.json        Manifest: format, schema version (migrations), tables, sequences
 *   home/...                    config.json, admin.key, frontend_config/, skills/, solutions/
 *   snapshots/...               checkpoint stores (<workspaces>/.snapshots)
 *   users/<user id>/...         each user's computer home: session folders and the rest
 *   db/<table>/<n>              a table's rows as COPY text, in pieces of about 1 MiB
 *   agentsvc-backup-end.json    Trailer: entries, bytes and sha256 of everything before it
 * Version 2 reads the rows while it packs the files: the db/ pieces come between the entries of
 * snapshots/ and users/ as they are ready (tables in load order, each table's pieces in order),
 * and every piece ends at a row. Version 1 put all of db/ after home/, pieces cut anywhere; a
 * restore reads both. tar carries no checksum of the data, so the trailer does: a restore checks
 * it before it commits.
 */
import { createHash, type Hash } from 'node:crypto';
import { once } from 'node:events';
import { pack as tarPack, type Headers, type Pack } from 'tar-stream';
import type { SequenceValue, TableInfo } from './table-copy.js';

export const MANIFEST = 'agentsvc-backup.json';
export const TRAILER = 'agentsvc-backup-end.json';
export const FORMAT = 'agentsvc-backup';
export const FORMAT_VERSION = 2;
/** Versions a restore reads. */
export const FORMAT_VERSIONS = [1, 2];
/**
 * A table's COPY text is cut into pieces at the first row end past this size. Small, because
 * pieces wait while files are packed: with 4 MiB ones, the ArrayBuffers held (pieces and read-ahead)
 * outgrew V8's old-space headroom and the collector ran the whole heap 50-75 times a backup
 * (+0.7 s CPU); with 1 MiB, once.
 */
export const DB_PIECE = 1024 * 1024;

export interface Manifest {
  format: typeof FORMAT;
  version: number;
  created_at: string;
  agentsvc_version: string;
  /** PostgreSQL `server_version` the rows were read from. */
  server_version: string;
  /** Migrations applied to the database backed up (its schema), in order. */
  migrations: string[];
  /** Tables in load order (parents first). */
  tables: TableInfo[];
  sequences: SequenceValue[];
}

export interface Trailer {
  entries: number;
  /** Bytes of entry content (files and rows, not tar headers). */
  bytes: number;
  sha256: string;
  /** Rows per table. */
  rows: Record<string, number>;
}

/** The running checksum both sides compute: each entry's name, type, link target and content. */
export class EntryDigest {
  private readonly hash: Hash = createHash('sha256');
  entries = 0;
  bytes = 0;

  begin(name: string, type: string, linkname = ''): void {
    this.entries++;
    this.hash.update(`${name}\0${type}\0${linkname}\0`);
  }

  data(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    this.hash.update(chunk);
  }

  digest(): string {
    return this.hash.copy().digest('hex');
  }
}

export type EntryHeader = Pick<Headers, 'name' | 'mode' | 'mtime' | 'linkname'> & { type: 'file' | 'directory' | 'symlink'; size?: number };

/** Adds entries to a tar stream one at a time, with backpressure, keeping the digest. */
export class ArchiveWriter {
  readonly pack: Pack = tarPack();
  readonly digest = new EntryDigest();

  /** `body`: the content, of `header.size` bytes unless it is one Uint8Array. */
  async add(header: EntryHeader, body?: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    const size = body instanceof Uint8Array ? body.byteLength : (header.size ?? 0);
    this.digest.begin(header.name, header.type, header.linkname ?? '');
    const done = new Promise<void>((resolve, reject) => {
      const sink = this.pack.entry({ ...header, size }, (err) => (err ? reject(err) : resolve()));
      void (async () => {
        if (body && header.type === 'file') {
          // Each chunk is hashed while the one before it is still being written.
          let written: Promise<unknown> | null = null;
          for await (const chunk of body instanceof Uint8Array ? [body] : body) {
            this.digest.data(chunk);
            if (written) await written;
            written = sink.write(chunk) ? null : once(sink as never, 'drain');
          }
          if (written) await written;
        }
        sink.end();
      })().catch((e) => sink.destroy(e));
    });
    await done;
  }

  async json(name: string, value: unknown): Promise<void> {
    await this.add({ name, type: 'file', mode: 0o600, mtime: new Date() }, Buffer.from(JSON.stringify(value, null, 2)));
  }

  finish(): void {
    this.pack.finalize();
  }
}
