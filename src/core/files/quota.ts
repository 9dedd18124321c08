/**
 * Per-user storage quota of the workspaces (AGENTSVC_USER_QUOTA_BYTES, docs/operations.md), enforced in
 * the file layer itself: every atomic write (entry-ops.ts replaceFile: file endpoints, file tools,
 * plugins) and every upload checks here before its new content takes the name, so nothing partial
 * is ever left. Accounting is cheap: a user's bytes are counted once by a descriptor walk of their
 * folder (links not followed) and then kept up to date by the deltas of the layer's own writes;
 * what commands in the sandbox write is not seen by the layer, so the count is taken again when it
 * is older than RESCAN_MS. A check is a map lookup and an addition.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { at, SessionFolder } from './confine.js';

const RESCAN_MS = 60_000;
export const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A write, upload or import past the quota: 413 QUOTA_EXCEEDED on REST, a tool error in a run. */
export class QuotaExceededError extends Error {
  readonly code = 'QUOTA_EXCEEDED';
  /** The error handler answers a 4xx error's own status and code. */
  readonly statusCode = 413;
  constructor(
    readonly usedBytes: number,
    readonly quotaBytes: number,
    addBytes: number,
  ) {
    super(`the storage quota of ${quotaBytes} bytes would be exceeded (${usedBytes} used, ${addBytes} more asked); nothing was written`);
  }
}

/** Where a walked entry's bytes are counted: the workspaces root and the user. */
export interface Account {
  root: string;
  user: string;
}

async function bytesBelow(dir: FileHandle): Promise<number> {
  let total = 0;
  for (const name of await readdir(at(dir)).catch(() => [] as string[])) {
    const st = await lstat(at(dir, name)).catch(() => null);
    if (!st) continue;
    if (st.isDirectory()) {
      const sub = await open(at(dir, name), DIR_FLAGS).catch(() => null);
      if (sub) total += await bytesBelow(sub).finally(() => sub.close());
    } else if (st.isFile()) total += st.size;
  }
  return total;
}

interface Count {
  bytes: number;
  at: number;
  /** A scan under way (its result replaces the count). */
  scanning?: Promise<number>;
}

class StorageQuota {
  /** Bytes a user may hold, by workspaces root (each service sets its own at start); none: no quota. */
  private readonly limits = new Map<string, number>();
  private readonly counts = new Map<string, Count>();

  /** The quota of every user under the workspaces `root` (0: none). */
  setLimit(root: string, bytes: number): void {
    if (bytes) this.limits.set(resolve(root), bytes);
    else this.limits.delete(resolve(root));
  }

  /** Bytes a user under `root` may hold; 0 means no quota. */
  limitOf(root: string): number {
    return this.limits.size ? (this.limits.get(resolve(root)) ?? 0) : 0;
  }

  private key(a: Account): string {
    return `${resolve(a.root)}\0${a.user}`;
  }

  /** The user's bytes in their workspaces (counted again when older than a minute). */
  async used(a: Account): Promise<number> {
    const k = this.key(a);
    const c = this.counts.get(k);
    if (c && Date.now() - c.at < RESCAN_MS) return c.bytes;
    if (c?.scanning) return c.scanning;
    const scanning = (async () => {
      const opened = await SessionFolder.home(a.root, a.user).open(false).catch(() => null);
      const bytes = opened ? await bytesBelow(opened.fh).finally(() => opened.close()) : 0;
      this.counts.set(k, { bytes, at: Date.now() });
      return bytes;
    })();
    this.counts.set(k, { bytes: c?.bytes ?? 0, at: c?.at ?? 0, scanning });
    return scanning.catch((e) => {
      this.counts.delete(k);
      throw e;
    });
  }

  /** Throws QuotaExceededError when `add` new bytes replacing `freed` would go past the quota. */
  async check(a: Account | undefined, add: number, freed = 0): Promise<void> {
    const limit = a && add > freed ? this.limitOf(a.root) : 0;
    if (!limit || !a) return;
    const used = await this.used(a);
    if (used - freed + add > limit) throw new QuotaExceededError(used, limit, add - freed);
  }

  /** The user's bytes as just counted (after a command of their computer). */
  set(a: Account, bytes: number): void {
    this.counts.set(this.key(a), { bytes, at: Date.now() });
  }

  /** A write through the layer changed the user's bytes by `delta`. */
  record(a: Account | undefined, delta: number): void {
    if (!a || !delta || !this.limitOf(a.root)) return;
    const c = this.counts.get(this.key(a));
    if (c && !c.scanning) c.bytes = Math.max(0, c.bytes + delta);
  }
}

/**
 * The quotas of the process, by workspaces root: the file layer learns an account's quota from the
 * account itself (its root), with no host path handed around and no setting shared by two services.
 */
export const storageQuota = new StorageQuota();

