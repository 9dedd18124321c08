/** What a snapshot restore writes (a tree of folders and blobs) and how it fetches the blobs. */

/** Blobs fetched from the store for a restore: at most this many bytes at a time (one file may be more). */
const RESTORE_BATCH_BYTES = 16 * 1024 * 1024;

export interface TargetDir {
  dirs: Map<string, TargetDir>;
  blobs: Map<string, { mode: string; id: string; size: number }>;
}
export const newDir = (): TargetDir => ({ dirs: new Map(), blobs: new Map() });

/**
 * Blobs in the order a restore writes them, fetched a batch at a time: asked for one not in the
 * current batch, the loader fetches the next batch from that blob's place in `order` (or the one
 * blob alone, when the folder changed between the two passes).
 */
export function blobLoader(fetch: (ids: string[]) => Promise<Map<string, Buffer>>, order: { id: string; size: number }[]) {
  let batch = new Map<string, Buffer>();
  let pos = 0;
  return async (id: string): Promise<Buffer> => {
    const have = batch.get(id);
    if (have) return have;
    let i = order.findIndex((n, k) => k >= pos && n.id === id);
    if (i < 0) return (await fetch([id])).get(id)!;
    const ids = new Set<string>();
    for (let bytes = 0; i < order.length && (!ids.size || bytes + order[i].size <= RESTORE_BATCH_BYTES); i++) {
      ids.add(order[i].id);
      bytes += order[i].size;
    }
    pos = i;
    batch = await fetch([...ids]);
    return batch.get(id)!;
  };
}
