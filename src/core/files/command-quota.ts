/**
 * The storage quota for what commands of a user's computer write (docs/storage-quota.md): the file
 * layer checks its own writes before they happen (quota.ts); a command writes where the layer does
 * not see it, so its writes are checked after it ran, and what it added past the quota is taken
 * back. Without a quota nothing here runs.
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { at, SessionFolder } from './confine.js';
import { removeEntry } from './entry-ops.js';
import { DIR_FLAGS } from './descriptors.js';
import type { Account } from './quota.js';

/** An entry of a user's tree as a command found it: what `undoPast` compares against. */
interface Seen {
  ino: number;
  size: number;
}

/** The user's tree before a command ran, when a quota applies (docs/storage-quota.md). */
export interface QuotaMark {
  account: Account;
  limit: number;
  seen: Map<string, Seen>;
}

/** At most this many entries are remembered before a command; past it the check only counts. */
const MARK_MAX = 100_000;

/** Every entry below `dir` (links not followed), by its path relative to the user folder. */
async function walk(dir: FileHandle, prefix: string, visit: (dir: FileHandle, name: string, rel: string, st: Stats) => Promise<boolean>): Promise<void> {
  for (const name of await readdir(at(dir)).catch(() => [] as string[])) {
    const st = await lstat(at(dir, name)).catch(() => null);
    if (!st) continue;
    const rel = prefix ? `${prefix}/${name}` : name;
    // The visitor removed the entry (or wants nothing below it).
    if (!(await visit(dir, name, rel, st))) continue;
    if (st.isDirectory()) {
      const sub = await open(at(dir, name), DIR_FLAGS).catch(() => null);
      if (sub) await walk(sub, rel, visit).finally(() => sub.close());
    }
  }
}

/**
 * Before a command of the user's computer runs: what their tree holds, so that what the command
 * adds past the quota can be taken back (`undoPast`). Null without a quota: nothing to do.
 */
export async function markQuota(a: Account | undefined): Promise<QuotaMark | null> {
  const limit = a?.quota.limitBytes;
  if (!a || !limit) return null;
  const seen = new Map<string, Seen>();
  const opened = await SessionFolder.home(a.quota.root, a.user).open(false).catch(() => null);
  if (opened)
    await walk(opened.fh, '', async (_d, _n, rel, st) => {
      if (seen.size < MARK_MAX) seen.set(rel, { ino: st.ino, size: st.isFile() ? st.size : 0 });
      return true;
    }).finally(() => opened.close());
  return { account: a, limit, seen };
}

/** What `undoPast` took back. */
export interface QuotaUndo {
  usedBytes: number;
  quotaBytes: number;
  removed: number;
  truncated: number;
}

/**
 * After the command: the user's bytes counted anew; past the quota, what the command added is
 * taken back through descriptors (never by path): entries that were not there before are removed,
 * files that grew are cut back to their earlier size. Files it rewrote in place without growing
 * keep their new content (they do not count against the quota). Null when within the quota.
 */
export async function undoPast(mark: QuotaMark): Promise<QuotaUndo | null> {
  const { quota, user } = mark.account;
  const opened = await SessionFolder.home(quota.root, user).open(false).catch(() => null);
  if (!opened) return null;
  try {
    let used = 0;
    await walk(opened.fh, '', async (_d, _n, _rel, st) => {
      if (st.isFile()) used += st.size;
      return true;
    });
    quota.set(user, used);
    if (used <= mark.limit) return null;
    const undo: QuotaUndo = { usedBytes: used, quotaBytes: mark.limit, removed: 0, truncated: 0 };
    const complete = mark.seen.size < MARK_MAX;
    await walk(opened.fh, '', async (dir, name, rel, st) => {
      const before = mark.seen.get(rel);
      if ((!before && complete) || (before && before.ino !== st.ino)) {
        await removeEntry(at(dir, name)).catch(() => undefined);
        undo.removed++;
        return false;
      }
      if (before && st.isFile() && st.size > before.size) {
        const fh = await open(at(dir, name), constants.O_WRONLY | constants.O_NOFOLLOW).catch(() => null);
        if (fh) await fh.truncate(before.size).finally(() => fh.close());
        undo.truncated++;
      }
      return true;
    });
    let after = 0;
    await walk(opened.fh, '', async (_d, _n, _rel, st) => {
      if (st.isFile()) after += st.size;
      return true;
    });
    quota.set(user, after);
    return undo;
  } finally {
    await opened.close();
  }
}
