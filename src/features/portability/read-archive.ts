
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import yauzl from 'yauzl';
import { AppError } from '../../platform/server/errors.js';
import { FORMAT, type Manifest, VERSION } from './archive.js';
import { invalidArchive as invalid, LineCounter } from './json-parts.js';


export interface ImportLimits {
  /** At most this many entries (AGENTSVC_IMPORT_MAX_ENTRIES). */
  entries: number;
  /** At most this many bytes unpacked (AGENTSVC_IMPORT_MAX_BYTES). */
  bytes: number;
}

/**
 * A member over RATIO_FROM bytes unpacked to over MAX_RATIO times its packed size is a bomb, not a
 * session. Smaller members are let through whatever their ratio: deflate reaches ~1000x on
 * repetitive files a workspace really holds (logs, padded data), and our own exports must import.
 */
const MAX_RATIO = 200;
const RATIO_FROM = 16 << 20;
const JSON_NAMES = new Set(['manifest.json', 'turns.jsonl', 'branches.json', 'checkpoints.json', 'tasks.json', 'memories.json', 'annotations.json']);
/** Parts added after version 1 first shipped: absent from older archives, without a warning. */
const OPTIONAL = new Set(['annotations.json']);

/** manifest.json is read whole: one small object. */
const MANIFEST_MAX = 1 << 20;

export interface Parsed {
  manifest: Manifest;
  /** The JSON parts the archive holds (written to the staging folder when there is one). */
  present: Set<string>;
  /** Non-blank lines of turns.jsonl. */
  turns: number;
  files: number;
  totalBytes: number;
  warnings: string[];
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: true, strictFileNames: true, validateEntrySizes: true }, (e, z) => (e ? reject(invalid(e.message)) : resolve(z!))),
  );
}

/** Refuse names that could land outside the folder, and anything but files and folders. */
function checkEntry(e: yauzl.Entry) {
  const name = e.fileName;
  if (!name || name.includes('\0') || name.includes('\\') || name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw invalid(`entry ${JSON.stringify(name)} has an absolute or odd name`);
  if (name.split('/').some((p) => p === '..')) throw invalid(`entry ${JSON.stringify(name)} escapes the archive (..)`);
  const type = (e.externalFileAttributes >>> 16) & 0o170000;
  if (type !== 0 && type !== 0o100000 && type !== 0o040000) throw invalid(`entry ${JSON.stringify(name)} is a link or a device`);
  if (!name.endsWith('/') && !JSON_NAMES.has(name) && !name.startsWith('files/')) throw invalid(`unexpected entry ${JSON.stringify(name)}`);
}

/**
 * Read an uploaded archive as hostile input: entry count, unpacked size (declared and actual) and
 * compression ratio bounded, names and types checked, the manifest read, `turns.jsonl` counted as
 * it goes by; the other JSON parts and `files/` written into `into` (when given) and nowhere else.
 * Nothing but the manifest is held in memory: createFromArchive reads the parts a record at a time.
 */
export async function readArchive(path: string, limits: ImportLimits, into: string | null): Promise<Parsed> {
  const zip = await openZip(path);
  if (zip.entryCount > limits.entries) {
    zip.close();
    throw invalid(`${zip.entryCount} entries, over ${limits.entries}`);
  }
  const present = new Set<string>();
  let manifestText: string | null = null;
  let turns = 0;
  let total = 0;
  let files = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', (e) => reject(e instanceof AppError ? e : invalid(e.message)));
      zip.on('end', () => resolve());
      zip.on('entry', (e: yauzl.Entry) => {
        void (async () => {
          checkEntry(e);
          total += e.uncompressedSize;
          if (total > limits.bytes) throw invalid(`over ${limits.bytes} bytes unpacked`);
          if (e.uncompressedSize > RATIO_FROM && e.uncompressedSize > e.compressedSize * MAX_RATIO) throw invalid(`entry ${JSON.stringify(e.fileName)} expands ${Math.round(e.uncompressedSize / Math.max(1, e.compressedSize))} times`);
          if (e.fileName.endsWith('/')) {
            if (into && e.fileName.startsWith('files/')) await mkdir(join(into, e.fileName), { recursive: true });
            return;
          }
          const read = await new Promise<NodeJS.ReadableStream>((res, rej) => zip.openReadStream(e, (err, s) => (err ? rej(invalid(err.message)) : res(s!))));
          // Counted as it is read: a size field that lies is caught too.
          let seen = 0;
          const counter = new Transform({
            transform(chunk: Buffer, _enc, cb) {
              seen += chunk.length;
              if (seen > e.uncompressedSize) return cb(invalid(`entry ${JSON.stringify(e.fileName)} is larger than it says`));
              cb(null, chunk);
            },
          });
          const drain = async (src: AsyncIterable<Buffer>) => {
            for await (const _ of src);
          };
          if (e.fileName === 'manifest.json') {
            if (e.uncompressedSize > MANIFEST_MAX) throw invalid(`manifest.json is over ${MANIFEST_MAX} bytes`);
            const parts: Buffer[] = [];
            await pipeline(read, counter, async (src: AsyncIterable<Buffer>) => {
              for await (const c of src) parts.push(c);
            });
            manifestText = Buffer.concat(parts).toString('utf8');
          } else if (JSON_NAMES.has(e.fileName)) {
            present.add(e.fileName);
            const lines = new LineCounter();
            const count = new Transform({
              transform(chunk: Buffer, _enc, cb) {
                if (e.fileName === 'turns.jsonl') lines.push(chunk);
                cb(null, chunk);
              },
            });
            await pipeline(read, counter, count, into ? createWriteStream(join(into, e.fileName), { flags: 'wx', mode: 0o600 }) : drain);
            if (e.fileName === 'turns.jsonl') turns = lines.end();
          } else {
            files++;
            if (into) {
              const dest = join(into, e.fileName);
              await mkdir(dirname(dest), { recursive: true });
              await pipeline(read, counter, createWriteStream(dest, { flags: 'wx', mode: 0o644 }));
            } else await pipeline(read, counter, drain);
          }
        })().then(
          () => zip.readEntry(),
          (err) => {
            zip.close();
            reject(err instanceof AppError ? err : invalid((err as Error).message));
          },
        );
      });
      zip.readEntry();
    });
  } catch (e) {
    zip.close();
    throw e;
  }
  if (manifestText === null) throw invalid('no manifest.json');
  let manifest: Manifest;
  try {
    manifest = JSON.parse(manifestText);
  } catch {
    throw invalid('manifest.json is not JSON');
  }
  if (manifest?.format !== FORMAT) throw invalid(`format ${JSON.stringify(manifest?.format)}, expected ${FORMAT}`);
  if (!Number.isInteger(manifest.version) || Math.floor(manifest.version) !== VERSION) throw invalid(`version ${manifest.version}; this server reads version ${VERSION}`);
  const warnings: string[] = [];
  for (const n of JSON_NAMES) if (n !== 'manifest.json' && !present.has(n) && !OPTIONAL.has(n)) warnings.push(`${n} missing: imported as empty`);
  return { manifest, present, turns, files, totalBytes: total, warnings };
}
