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
/** Operator files of AGENTSVC_HOME that make up the install (logs, run state and the database folder do not). */
export const HOME_FILES = ['config.json', 'admin.key'];
export const HOME_FOLDERS = ['frontend_config', 'skills', 'solutions'];
/** Checkpoint stores under the workspaces root (timetravel/snapshots.ts). */
export const SNAPSHOTS = '.snapshots';
/** A user's folder under the workspaces root: the names SessionFolder accepts, not our own dot folders. */
export const USER_FOLDER = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;
/** Most folders an entry's path may go through below its tree (a restore holds one descriptor each). */
export const MAX_DEPTH = 256;

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

/** An entry a backup cannot hold: the whole archive is refused (docs/backup.md). */
export class EntryRefused extends Error {}

export type EntryKind = 'file' | 'directory' | 'symlink';
/** Where an entry goes: a table's piece, or a path below one of the file trees. */
export type EntryPlace = { area: 'db'; table: string } | { area: 'home' | 'snapshots'; rel: string } | { area: 'users'; user: string; rel: string };

/**
 * What an entry (other than the manifest and the trailer) is, by the format's rules, checked before
 * anything of it is written: a file, a folder or a link only (no hard link, device or FIFO); a
 * plain relative name (no absolute name, no `.`, `..` or empty part) in one of the areas above;
 * in home/ only its files and folders; links only in users' trees (where users make them; home/
 * and snapshots/ never hold one, and the service reads those folders by path, so a link there
 * would point it anywhere). Whether a path goes through a link is the writer's to refuse
 * (staged-tree.ts), as it opens each folder.
 */
export function entryPlace(rawName: string, type: string | null | undefined, linkname?: string | null): { kind: EntryKind; place: EntryPlace } {
  const name = type === 'directory' ? rawName.replace(/\/$/, '') : rawName;
  const refuse = (why: string) => new EntryRefused(`the archive is refused: entry ${JSON.stringify(rawName)} ${why}`);
  if (type !== 'file' && type !== 'directory' && type !== 'symlink') throw refuse(`is a ${type ?? 'untyped'} entry; a backup holds only files, folders and symbolic links`);
  const parts = name.split('/');
  if (!name || name.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\0'))) {
    throw refuse('is not a plain relative name (absolute, or with an empty, . or .. part); nothing is written outside the home');
  }
  const [area, ...rest] = parts;
  if (rest.length > MAX_DEPTH + 1) throw refuse(`is more than ${MAX_DEPTH} folders deep`);
  if (type === 'symlink' && area !== 'users') throw refuse(`is a symbolic link (to ${JSON.stringify(linkname ?? '')}); links are restored only in users' trees`);
  if (type === 'symlink' && !linkname) throw refuse('is a symbolic link without a target');
  if (area === 'db') {
    if (type !== 'file' || rest.length !== 2) throw refuse('is not a table piece (db/<table>/<n>)');
    return { kind: type, place: { area, table: rest[0] } };
  }
  if (area === 'home' && rest.length) {
    const top = rest[0];
    const file = HOME_FILES.includes(top);
    if (!file && !HOME_FOLDERS.includes(top)) throw refuse(`is not one of home/'s ${[...HOME_FILES, ...HOME_FOLDERS].join(', ')}`);
    if (file && (rest.length !== 1 || type !== 'file')) throw refuse(`is not the file home/${top}`);
    return { kind: type, place: { area, rel: rest.join('/') } };
  }
  if (area === 'snapshots' && rest.length) return { kind: type, place: { area, rel: rest.join('/') } };
  if (area === 'users' && rest.length >= 2) {
    if (!USER_FOLDER.test(rest[0])) throw refuse('does not name a user folder');
    return { kind: type, place: { area, user: rest[0], rel: rest.slice(1).join('/') } };
  }
  throw refuse('is not in home/, snapshots/, users/<id>/ or db/');
}
