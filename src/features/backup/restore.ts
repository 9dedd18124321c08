/**
 * `agentsvc restore`: an archive (archive.ts) into an empty home. The database part runs this
 * code's migrations, then loads every table's COPY text inside one transaction that commits only
 * once the trailer's checksum matched, so a corrupt or truncated archive leaves no rows. Each file
 * entry is checked by the format's rules (archive.ts entryPlace) and written into a staging folder
 * through descriptors, no link followed (staged-tree.ts), then moved into place just before the
 * commit; a failed restore removes what it wrote (restore-target.ts). The archive is untrusted
 * input: docs/backup.md says what this guarantees.
 */
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open, rmdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Transform } from 'node:stream';
import { extract as tarExtract } from 'tar-stream';
import { loadConfig, type Config } from '../../platform/config/index.js';
import { openDatabase, type Database } from '../../platform/db/index.js';
import { migrationsList } from '../../platform/db/migrations/index.js';
import { EntryDigest, EntryRefused, entryPlace, FORMAT, FORMAT_VERSIONS, MANIFEST, type Manifest, SNAPSHOTS, TRAILER, type Trailer } from './archive.js';
import { checkTarget, emptyTarget, missingFolders, RestoreRefused, type Staging, setAside, stage } from './restore-target.js';
import { connect, copyIn, type CopyIn, listTables, setSequences, truncate } from './table-copy.js';

/** The archive is not a whole, readable backup. */
export class BadArchive extends Error {}

/** Largest home/config.json a restore reads (it is held in memory to choose the target). */
const CONFIG_MAX = 16 * 1024 * 1024;

export interface RestoreOptions {
  file: string;
  home: string;
  force: boolean;
  /** --config FILE: the settings to restore with (else the archive's config.json, the environment winning). */
  configFile?: string;
  env?: NodeJS.ProcessEnv;
}

export interface RestoreResult {
  home: string;
  entries: number;
  bytes: number;
  rows: Record<string, number>;
  database: 'embedded' | 'DATABASE_URL';
}

type Entry = AsyncIterable<Uint8Array> & { header: { name: string; type: string | null; mode?: number; mtime?: Date; linkname?: string | null; size?: number } };

async function readAll(e: AsyncIterable<Uint8Array>, digest?: EntryDigest): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of e) {
    digest?.data(c);
    parts.push(c);
  }
  return Buffer.concat(parts);
}

function parseManifest(text: Buffer): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(text.toString('utf8'));
  } catch {
    throw new BadArchive(`${MANIFEST} is not valid JSON`);
  }
  if (m?.format !== FORMAT || !Array.isArray(m.tables) || !Array.isArray(m.migrations)) throw new BadArchive(`${MANIFEST} is not an agentsvc backup manifest`);
  if (!FORMAT_VERSIONS.includes(m.version)) throw new BadArchive(`archive format version ${m.version}; this agentsvc reads versions ${FORMAT_VERSIONS.join(' and ')}`);
  const known = new Set(migrationsList.map((x) => x.name));
  const unknown = m.migrations.find((x) => !known.has(x));
  if (unknown) throw new RestoreRefused(`the archive was made by a newer agentsvc (${m.agentsvc_version}: migration ${unknown}); restore it with that version or a later one`);
  return m;
}

function parseTrailer(text: Buffer): Trailer {
  try {
    const t = JSON.parse(text.toString('utf8')) as Trailer;
    if (typeof t?.sha256 === 'string' && typeof t.entries === 'number' && t.rows && typeof t.rows === 'object') return t;
  } catch {}
  throw new BadArchive(`the archive is corrupt: ${TRAILER} is not its trailer`);
}

/** The settings the restored home will run with: the environment, then --config or the archive's config.json. */
function targetConfig(opts: RestoreOptions, archivedConfig: Buffer | null): Config {
  const overrides = { AGENTSVC_HOME: opts.home };
  if (opts.configFile || !archivedConfig) return loadConfig({ env: opts.env, configFile: opts.configFile, overrides });
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-restore-'));
  try {
    writeFileSync(join(dir, 'config.json'), archivedConfig, { mode: 0o600 });
    return loadConfig({ env: opts.env, configFile: join(dir, 'config.json'), overrides });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Counts the archive's bytes as they are read, for the progress line. */
function counter(onBytes: (n: number) => void): Transform {
  let n = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      onBytes(n);
      cb(null, chunk);
    },
  });
}

export async function restoreBackup(opts: RestoreOptions, progress: (s: { bytes: number; totalBytes: number; entries: number; phase: string }) => void = () => {}): Promise<RestoreResult> {
  const totalBytes = (await stat(opts.file).catch((e) => Promise.reject(new RestoreRefused(`cannot read ${opts.file}: ${(e as Error).message}`)))).size;
  const head = Buffer.alloc(2);
  const fh = await open(opts.file, 'r');
  await fh.read(head, 0, 2, 0).finally(() => fh.close());
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  let read = 0;
  const extract = tarExtract();
  let unreadable: BadArchive | null = null;
  let abandoned = false;
  // zlib's and tar's own words ("incorrect data check", "Unexpected end of data") said as what they mean here.
  const broken = (e: unknown) => new BadArchive(`the archive is corrupt or truncated: ${(e as Error).message}`);
  const source = pipeline(createReadStream(opts.file), counter((n) => (read = n)), ...(gzip ? [createGunzip()] : []), extract as never).catch((e) => {
    if (abandoned) return;
    unreadable = broken(e);
    extract.destroy(unreadable);
  });
  const entriesIt = (extract as unknown as AsyncIterable<Entry>)[Symbol.asyncIterator]();
  const next = async (): Promise<Entry | null> => {
    try {
      const r = await entriesIt.next();
      return r.done ? null : r.value;
    } catch (e) {
      if (e instanceof BadArchive || e instanceof RestoreRefused) throw e;
      // gunzip's error may reach the entries before the pipeline's own handler has named it.
      if (unreadable || String((e as NodeJS.ErrnoException).code ?? '').startsWith('Z_')) throw unreadable ?? broken(e);
      throw new BadArchive(`not a readable backup archive: ${(e as Error).message}`);
    }
  };

  const digest = new EntryDigest();
  const first = await next();
  if (!first || first.header.name !== MANIFEST || first.header.type !== 'file' || (first.header.size ?? 0) > 64 * 1024 * 1024) throw new BadArchive(`not an agentsvc backup: it does not start with ${MANIFEST}`);
  digest.begin(MANIFEST, 'file');
  const manifest = parseManifest(await readAll(first, digest));
  let entry = await next();
  let archivedConfig: { text: Buffer; mode: number; mtime: Date } | null = null;
  if (entry?.header.name === 'home/config.json') {
    entryPlace(entry.header.name, entry.header.type);
    if ((entry.header.size ?? 0) > CONFIG_MAX) throw new BadArchive(`the archive is refused: its home/config.json is over ${CONFIG_MAX / 1024 / 1024} MiB`);
    digest.begin(entry.header.name, 'file');
    archivedConfig = { text: await readAll(entry, digest), mode: entry.header.mode ?? 0o600, mtime: entry.header.mtime ?? new Date() };
    entry = await next();
  }
  const config = targetConfig(opts, archivedConfig?.text ?? null);
  const { dbHoldsData } = await checkTarget(config, opts.force);
  const madeFolders = await missingFolders(config);

  // From here on the target changes: anything that fails undoes it.
  const previous = opts.force ? await setAside(config) : null;
  let staging: Staging | null = null;
  // Set by database(): `as` keeps TypeScript from narrowing them to null in the code after it.
  let db = null as Database | null;
  let client = null as Awaited<ReturnType<typeof connect>> | null;
  const rows: Record<string, number> = {};
  let committed = false;
  let copying = null as { table: string; copy: CopyIn } | null;
  const tables = new Map(manifest.tables.map((t) => [t.name, t]));
  // Started at the first table piece: an archive refused for its files never starts a database.
  const database = async () => {
    if (client) return client;
    db = await openDatabase(config, { migrate: true, poolMax: 1, role: 'cli' });
    client = await connect(db.url);
    await client.query('begin');
    const present = new Map((await listTables(client)).map((t) => [t.name, t]));
    if (opts.force && dbHoldsData) await truncate(client, [...present.values()]);
    for (const t of manifest.tables) {
      const have = present.get(t.name);
      const missing = t.columns.filter((c) => !have?.columns.includes(c));
      if (!have || missing.length) throw new BadArchive(`table ${t.name} of the archive does not match this schema (${have ? `columns ${missing.join(', ')}` : 'no such table'})`);
    }
    return client;
  };
  try {
    staging = await stage(config);
    if (archivedConfig) await staging.home.file('config.json', archivedConfig.mode, archivedConfig.mtime, [archivedConfig.text]);
    const endCopy = async () => {
      if (copying) rows[copying.table] = (rows[copying.table] ?? 0) + (await copying.copy.end());
      copying = null;
    };
    let trailer: Trailer | null = null;
    for (; entry; entry = await next()) {
      const { name, type, linkname } = entry.header;
      progress({ bytes: read, totalBytes, entries: digest.entries, phase: name.split('/').slice(0, 2).join('/') });
      if (name === TRAILER) {
        const expected = digest.digest();
        if (type !== 'file' || (entry.header.size ?? 0) > 1024 * 1024) throw new BadArchive(`the archive is corrupt: ${TRAILER} is not its trailer`);
        trailer = parseTrailer(await readAll(entry));
        if (trailer.sha256 !== expected || trailer.entries !== digest.entries) throw new BadArchive('the archive is corrupt: its checksum does not match its content');
        break;
      }
      // Checked before anything of the entry is written; where it goes is opened without following links.
      const { kind, place } = entryPlace(name, type, linkname);
      digest.begin(name, kind, linkname ?? '');
      const body = (async function* () {
        for await (const c of entry!) {
          digest.data(c);
          yield c;
        }
      })();
      if (place.area === 'db') {
        const table = tables.get(place.table);
        if (!table) throw new BadArchive(`unexpected entry ${name}: the manifest lists no table ${place.table}`);
        const c = await database();
        if (copying?.table !== table.name) {
          await endCopy();
          copying = { table: table.name, copy: copyIn(c, table) };
        }
        for await (const chunk of body) await copying.copy.write(chunk);
        continue;
      }
      // A table's COPY stays open across the files between its pieces (version 2).
      const tree = place.area === 'home' ? staging.home : staging.workspaces;
      const rel = place.area === 'users' ? `${place.user}/${place.rel}` : place.area === 'snapshots' ? `${SNAPSHOTS}/${place.rel}` : place.rel;
      const mode = entry.header.mode ?? 0o644;
      if (kind === 'directory') await tree.directory(rel, mode);
      else if (kind === 'symlink') await tree.symlink(rel, linkname!);
      else await tree.file(rel, mode, entry.header.mtime ?? new Date(), body);
      for await (const _ of body); // drain what a writer left (nothing, normally)
    }
    await endCopy();
    if (!trailer) throw new BadArchive(`the archive is truncated: it ends before ${TRAILER}`);
    for (const [t, n] of Object.entries(trailer.rows)) {
      if ((rows[t] ?? 0) !== n) throw new BadArchive(`the archive is corrupt: table ${t} holds ${rows[t] ?? 0} rows, ${n} were backed up`);
    }
    const c = await database();
    await setSequences(c, manifest.sequences);
    if (await next()) throw new BadArchive(`unexpected entries after ${TRAILER}`);
    await source;
    // The archive proved whole: its files move into place, then the rows commit.
    await staging.commit();
    await c.query('commit');
    committed = true;
    progress({ bytes: totalBytes, totalBytes, entries: digest.entries, phase: 'done' });
    return { home: config.home, entries: digest.entries, bytes: digest.bytes, rows, database: config.databaseUrl ? 'DATABASE_URL' : 'embedded' };
  } catch (e) {
    // Destroyed already: the archive itself failed (the pipeline says why); else stop reading it.
    const archiveFailed = (extract as unknown as { destroying: boolean }).destroying || extract.destroyed;
    abandoned = !archiveFailed;
    extract.destroy();
    // A table's COPY may be open (its pieces go around files): it fails first, else the rollback waits behind it.
    copying?.copy.abort('restore failed');
    await client?.query('rollback').catch(() => {});
    await source;
    throw archiveFailed && !(e instanceof BadArchive || e instanceof EntryRefused) ? (unreadable ?? broken(e)) : e;
  } finally {
    await staging?.close();
    await client?.end().catch(() => {});
    await db?.close().catch(() => {});
    // After the database stopped: a failed restore leaves the target as it was (empty, or with
    // what --force set aside put back, and without the folders it made); a committed one drops
    // what it replaced.
    if (committed) await previous?.drop();
    else {
      if (previous) await previous.putBack();
      else await emptyTarget(config).catch(() => {});
      for (const dir of madeFolders) await rmdir(dir).catch(() => {});
    }
  }
}
