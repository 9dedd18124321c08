import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { constants } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import yazl from 'yazl';
import { at, type Entry, type OpenSession, type SessionFolder } from './confine.js';
import { openRead, statEntry } from './entry-ops.js';

interface ZipItem {
  name: string;
  /** Workspace-relative path of the file to read (links already followed). */
  rel?: string;
  dir: boolean;
  mtime: Date;
  mode: number;
  size: number;
}

/** A streamed ZIP and what it will hold: entry count and unpacked bytes, known before the first byte. */
export type ZipStream = PassThrough & { entries: number; bytes: number };

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Every entry under the open folder `dir` (workspace path `rel`), named relative to it, walked
 * through descriptors. A symlink is kept only when it resolves to a file inside the workspace;
 * links to folders (possible cycles) and links that lead out are left out, as are FIFOs and devices.
 */
async function walk(s: OpenSession, dir: FileHandle, rel: string, prefix: string, out: ZipItem[]): Promise<void> {
  const names = (await readdir(at(dir))).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (const n of names) {
    const childRel = rel ? `${rel}/${n}` : n;
    const name = prefix + n;
    let st = await lstat(at(dir, n)).catch(() => null);
    if (!st) continue; // gone meanwhile
    if (st.isSymbolicLink()) {
      const target = await s.walk(childRel, { follow: true }).catch(() => null);
      if (!target) continue;
      st = await statEntry(target).catch(() => null);
      await target.close();
      if (st?.isFile()) out.push({ name, rel: target.rel, dir: false, mtime: st.mtime, mode: st.mode, size: st.size });
      continue;
    }
    if (st.isDirectory()) {
      out.push({ name: name + '/', dir: true, mtime: st.mtime, mode: st.mode, size: 0 });
      const sub = await open(at(dir, n), DIR_FLAGS).catch(() => null);
      if (sub) await walk(s, sub, childRel, name + '/', out).finally(() => sub.close());
    } else if (st.isFile()) {
      out.push({ name, rel: childRel, dir: false, mtime: st.mtime, mode: st.mode, size: st.size });
    }
  }
}

/** Open one file of the archive, confined again at the moment it is read; at most its size then. */
async function readConfined(folder: SessionFolder, rel: string): Promise<Readable> {
  const fh = await folder.with(async (s) => {
    const e = await s.walk(rel, { follow: true });
    return openRead(e).finally(() => e.close());
  });
  const { size } = await fh.stat();
  if (size === 0) {
    await fh.close();
    return Readable.from([]);
  }
  return fh.createReadStream({ start: 0, end: size - 1 });
}

/** An entry before the folder's: bytes, or a stream made when the archive reaches it (its size estimated for `bytes`). */
export type ExtraEntry = { name: string; data: Buffer } | { name: string; stream: () => Readable; sizeEstimate: number };

/**
 * A ZIP of the walked folder `dir` (under `prefix`, after the `extra` entries; no folder: only
 * those), streamed: files are opened one at a time as the archive is
 * written, each through a fresh confined walk.
 */
export async function zipFolder(
  folder: SessionFolder,
  s: OpenSession | null,
  dir: Entry | null,
  opts: { prefix?: string; extra?: ExtraEntry[] } = {},
): Promise<ZipStream> {
  const items: ZipItem[] = [];
  if (s && dir) {
    const d = dir.name === null ? null : await open(dir.path, DIR_FLAGS);
    try {
      await walk(s, d ?? dir.dir, dir.rel, opts.prefix ?? '', items);
    } finally {
      await d?.close();
    }
  }
  const zip = new yazl.ZipFile();
  for (const e of opts.extra ?? []) {
    if ('data' in e) zip.addBuffer(e.data, e.name);
    else zip.addReadStreamLazy(e.name, {}, (cb) => cb(null, e.stream()));
  }
  const out = Object.assign(new PassThrough(), {
    entries: items.length + (opts.extra?.length ?? 0),
    bytes: items.reduce((n, it) => n + it.size, 0) + (opts.extra ?? []).reduce((n, e) => n + ('data' in e ? e.data.length : e.sizeEstimate), 0),
  });
  let reading: Readable | null = null;
  zip.on('error', (e: Error) => out.destroy(e));
  // A client that goes away mid-download must not leave the current file open.
  out.on('close', () => reading?.destroy());
  for (const it of items) {
    if (it.dir) zip.addEmptyDirectory(it.name, { mtime: it.mtime, mode: it.mode });
    else
      zip.addReadStreamLazy(it.name, { mtime: it.mtime, mode: it.mode }, (cb) => {
        readConfined(folder, it.rel!).then(
          (r) => {
            reading = r;
            r.once('error', (e) => zip.emit('error', e));
            cb(null, r);
          },
          (e) => cb(e, null as never),
        );
      });
  }
  zip.end();
  zip.outputStream.pipe(out);
  return out;
}
