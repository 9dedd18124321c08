/**
 * The service-owned side of a checkpoint store (`<workspaces>/.snapshots/<user>/<session>.git`, a
 * bare repository no sandbox sees): loose objects written here, pack bookkeeping, removal. Never a
 * user's tree: those are read and written through src/core/files/tree-sync.ts.
 */
import { createHash } from 'node:crypto';
import { link, mkdir, readdir, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { deflate, constants as zlib } from 'node:zlib';

const deflateAsync = promisify(deflate);

/** The id git gives an object of `type` with `content`. */
export function objectId(type: 'blob' | 'tree', content: Uint8Array): string {
  return createHash('sha1').update(`${type} ${content.byteLength}\0`).update(content).digest('hex');
}

/** The store holds a repository (made by `git init`). */
export const storeExists = (gitDir: string) => stat(join(gitDir, 'HEAD')).then(() => true, () => false);

export const makeStoreFolder = (dir: string) => mkdir(dir, { recursive: true, mode: 0o700 });

export const removeStore = (gitDir: string) => rm(gitDir, { recursive: true, force: true });

/**
 * Write one loose object (zlib level 1, as git's core.looseCompression) unless it is loose already;
 * one already packed may be written loose again, which the next repack folds. Compression runs on
 * the thread pool. Returns its id and whether it was written.
 */
export async function writeObject(gitDir: string, type: 'blob' | 'tree', content: Uint8Array, id = objectId(type, content)): Promise<{ id: string; written: boolean }> {
  const dir = join(gitDir, 'objects', id.slice(0, 2));
  const path = join(dir, id.slice(2));
  if (await stat(path).then(() => true, () => false)) return { id, written: false };
  const body = await deflateAsync(Buffer.concat([Buffer.from(`${type} ${content.byteLength}\0`), content]), { level: zlib.Z_BEST_SPEED });
  const tmp = join(gitDir, 'objects', `tmp_obj_${process.pid}_${Math.random().toString(36).slice(2)}`);
  await writeFile(tmp, body, { mode: 0o444 });
  try {
    // link, not rename: an object written meanwhile by another snapshot of the store stays as it
    // is. A pack's `prune-packed` removes emptied object folders: made again when that happened.
    for (let attempt = 0; ; attempt++) {
      await mkdir(dir, { recursive: true });
      const done = await link(tmp, path).then(
        () => true,
        (e) => {
          if (e.code === 'EEXIST') return true;
          if (e.code === 'ENOENT' && attempt < 5) return false;
          throw e;
        },
      );
      if (done) break;
    }
  } finally {
    await unlink(tmp).catch(() => {});
  }
  return { id, written: true };
}

/** The packs of a store: the bytes of the kept ones, and the open ones (name without .pack, size). */
export async function packLayers(gitDir: string): Promise<{ keptBytes: number; open: { name: string; size: number }[] }> {
  const dir = join(gitDir, 'objects', 'pack');
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

/** Mark a pack as kept: never rewritten by a repack. */
export const keepPack = (gitDir: string, name: string) => writeFile(join(gitDir, 'objects', 'pack', `${name}.keep`), '');

/** Remove a pack another pack now holds (index last, so a reader never sees an index without its pack for long). */
export async function removePack(gitDir: string, name: string): Promise<void> {
  const base = join(gitDir, 'objects', 'pack', name);
  for (const ext of ['.pack', '.rev', '.bitmap', '.idx']) await unlink(`${base}${ext}`).catch(() => {});
}
