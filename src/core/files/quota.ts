/**
 * Per-user storage quota of the workspaces (AGENTSVC_USER_QUOTA_BYTES, docs/storage-quota.md), enforced in
 * the file layer itself: every atomic write (entry-ops.ts replaceFile: file endpoints, file tools,
 * plugins) and every upload checks here before its new content takes the name, so nothing partial
 * is ever left. Accounting is cheap: a user's bytes are counted once by a descriptor walk of their
 * folder (links not followed) and then kept up to date by the deltas of the layer's own writes;
 * what commands in the sandbox write is not seen by the layer, so the count is taken again when it
 * is older than RESCAN_MS. A check is a map lookup and an addition.
 */
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { at, SessionFolder } from './confine.js';
import { DIR_FLAGS } from './descriptors.js';

const RESCAN_MS = 60_000;

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

/**
 * Whose quota a folder's bytes count against: the quota of the service that made the folder
 * (handed to it when it was made: SessionFolder, SessionFolders) and the user.
 */
export interface Account {
  quota: StorageQuota;
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

/**
 * The storage quota of one service: the users under its workspaces root and their counts. Made once
 * where the service is composed (the `quota` module, src/core/files/module.ts) and handed to
 * whatever makes folders that are written (the session folders, imports, checkpoints, plugins):
 * a folder made with it counts its writes here; nothing is kept per process.
 */
export class StorageQuota {
  /** The workspaces root (config.workspaces), resolved. */
  readonly root: string;
  private readonly counts = new Map<string, Count>();

  constructor(
    root: string,
    /** Bytes a user may hold (AGENTSVC_USER_QUOTA_BYTES); 0: no quota. */
    readonly limitBytes: number,
  ) {
    this.root = resolve(root);
  }

  /** The user's bytes in their workspaces (counted again when older than a minute). */
  async used(user: string): Promise<number> {
    const c = this.counts.get(user);
    if (c && Date.now() - c.at < RESCAN_MS) return c.bytes;
    if (c?.scanning) return c.scanning;
    const scanning = (async () => {
      const opened = await SessionFolder.home(this.root, user).open(false).catch(() => null);
      const bytes = opened ? await bytesBelow(opened.fh).finally(() => opened.close()) : 0;
      this.counts.set(user, { bytes, at: Date.now() });
      return bytes;
    })();
    this.counts.set(user, { bytes: c?.bytes ?? 0, at: c?.at ?? 0, scanning });
    return scanning.catch((e) => {
      this.counts.delete(user);
      throw e;
    });
  }

  /** Throws QuotaExceededError when `add` new bytes replacing `freed` would go past the quota. */
  async check(user: string, add: number, freed = 0): Promise<void> {
    if (!this.limitBytes || add <= freed) return;
    const used = await this.used(user);
    if (used - freed + add > this.limitBytes) throw new QuotaExceededError(used, this.limitBytes, add - freed);
  }

  /** The user's bytes as just counted (after a command of their computer). */
  set(user: string, bytes: number): void {
    this.counts.set(user, { bytes, at: Date.now() });
  }

  /** A write through the layer changed the user's bytes by `delta`. */
  record(user: string, delta: number): void {
    if (!delta || !this.limitBytes) return;
    const c = this.counts.get(user);
    if (c && !c.scanning) c.bytes = Math.max(0, c.bytes + delta);
  }
}

/** `account.quota.check`, for a folder made without a quota (nothing to check). */
export async function checkQuota(a: Account | undefined, add: number, freed = 0): Promise<void> {
  await a?.quota.check(a.user, add, freed);
}

/** `account.quota.record`, for a folder made without a quota (nothing to count). */
export function recordQuota(a: Account | undefined, delta: number): void {
  a?.quota.record(a.user, delta);
}
