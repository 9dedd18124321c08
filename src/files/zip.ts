import { constants } from 'node:fs';
import { lstat, open, readdir, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import yazl from 'yazl';

interface ZipItem {
  name: string;
  abs?: string;
  dir: boolean;
  mtime: Date;
  mode: number;
}

const inside = (root: string, p: string) => p === root || p.startsWith(root + sep);

/**
 * Every entry under `dir`, named relative to it. A symlink is followed only when it resolves to a
 * file inside the workspace; links to folders (possible cycles) and links that lead out are left out.
 */
async function walk(root: string, dir: string, prefix: string, out: ZipItem[]): Promise<void> {
  const dirents = await readdir(dir, { withFileTypes: true });
  dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const d of dirents) {
    const abs = join(dir, d.name);
    const name = prefix + d.name;
    let st;
    try {
      st = await lstat(abs);
      if (st.isSymbolicLink()) {
        const real = await realpath(abs);
        if (!inside(root, real)) continue;
        st = await stat(real);
        if (!st.isFile()) continue;
        out.push({ name, abs: real, dir: false, mtime: st.mtime, mode: st.mode });
        continue;
      }
    } catch (e) {
      if (e.code === 'ENOENT' || e.code === 'ELOOP') continue; // gone, or a dangling or looping link
      throw e;
    }
    if (st.isDirectory()) {
      out.push({ name: name + '/', dir: true, mtime: st.mtime, mode: st.mode });
      await walk(root, abs, name + '/', out);
    } else if (st.isFile()) {
      out.push({ name, abs, dir: false, mtime: st.mtime, mode: st.mode });
    }
  }
}

/**
 * A ZIP of the folder `dir` (confined already), streamed: files are opened one at a time as the
 * archive is written, without following a link swapped in at the last moment.
 */
export async function zipFolder(root: string, dir: string): Promise<Readable> {
  const items: ZipItem[] = [];
  await walk(root, dir, '', items);
  const zip = new yazl.ZipFile();
  const out = new PassThrough();
  let reading: Readable | null = null;
  zip.on('error', (e: Error) => out.destroy(e));
  // A client that goes away mid-download must not leave the current file open.
  out.on('close', () => reading?.destroy());
  for (const it of items) {
    if (it.dir) zip.addEmptyDirectory(it.name, { mtime: it.mtime, mode: it.mode });
    else
      zip.addReadStreamLazy(it.name, { mtime: it.mtime, mode: it.mode }, (cb) => {
        open(it.abs!, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).then(
          (fh) => {
            reading = fh.createReadStream();
            reading.once('error', (e) => zip.emit('error', e));
            cb(null, reading);
          },
          (e) => cb(e, null as never),
        );
      });
  }
  zip.end();
  zip.outputStream.pipe(out);
  return out;
}
