/**
 * Where a restore goes and whether it may: the home (and a workspaces folder outside it) must be
 * empty, the database must hold no install, and no `up` may serve the home. `--force` first sets
 * what is there aside (renamed into ASIDE inside each target folder: same file system, no copy),
 * and drops it only once the restore committed; a restore that fails puts it back, so a broken
 * archive never costs the install it was meant to replace. (The database of DATABASE_URL is
 * emptied inside the restore's own transaction, which a failure rolls back.) Files a failed
 * restore wrote are removed again, so a refused or broken restore leaves the target as it was.
 */
import { mkdir, open, readdir, rename, rm, rmdir, symlink } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { constants } from 'node:fs';
import type { Config } from '../../platform/config/index.js';
import { servingUrl } from '../../cli/served.js';
import { archivePath, fillFile } from '../../core/files/tree-io.js';
import { connect, holdsData } from './table-copy.js';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/** A restore refused before it changed anything (exit 1 with this message). */
export class RestoreRefused extends Error {}

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch((e) => {
    if (e.code === 'ENOENT') return [];
    throw e;
  });
}

/** The folders a restore writes into: the home, and the workspaces root when it is elsewhere. */
export function targetFolders(config: Config): string[] {
  const inside = !relative(config.home, config.workspaces).startsWith('..');
  return inside ? [config.home] : [config.home, config.workspaces];
}

/** Refuses a served home, or (without force) a non-empty folder or a database holding an install. */
export async function checkTarget(config: Config, force: boolean): Promise<{ dbHoldsData: boolean }> {
  const url = await servingUrl(config.home);
  if (url) throw new RestoreRefused(`${config.home} is served by a running agentsvc up (${url}); stop it first`);
  for (const dir of targetFolders(config)) {
    const found = await entries(dir);
    if (found.length && !force) {
      throw new RestoreRefused(`${dir} is not empty (${found.slice(0, 3).join(', ')}${found.length > 3 ? ', ...' : ''}); restore into an empty home, or pass --force to replace what is there`);
    }
  }
  let dbHoldsData = false;
  if (config.databaseUrl) {
    const c = await connect(config.databaseUrl).catch((e) => {
      throw new RestoreRefused(`cannot connect to DATABASE_URL: ${(e as Error).message}`);
    });
    try {
      dbHoldsData = await holdsData(c);
    } finally {
      await c.end();
    }
    if (dbHoldsData && !force) throw new RestoreRefused('the database of DATABASE_URL already holds an install (users); restore into an empty database, or pass --force to replace it');
  }
  return { dbHoldsData };
}

/** Where `--force` keeps the replaced install until the restore committed. */
export const ASIDE = '.agentsvc-restore-previous';

/** Removes what a restore wrote inside the target folders (after a failed one); never ASIDE. */
export async function emptyTarget(config: Config): Promise<void> {
  for (const dir of targetFolders(config)) {
    for (const name of await entries(dir)) if (name !== ASIDE) await rm(join(dir, name), { recursive: true, force: true });
  }
}

export interface SetAside {
  /** After a failed restore: what it wrote removed, the previous content back in place. */
  putBack(): Promise<void>;
  /** After a committed restore: the previous content removed. */
  drop(): Promise<void>;
}

/**
 * --force: moves every entry of the target folders into ASIDE. An ASIDE left by a restore that
 * was killed halfway is refused (it may be the only copy of an install), not overwritten.
 */
export async function setAside(config: Config): Promise<SetAside> {
  const folders = targetFolders(config);
  for (const dir of folders) {
    if ((await entries(dir)).includes(ASIDE)) {
      throw new RestoreRefused(`${join(dir, ASIDE)} is left from an earlier restore that did not finish (it holds what that restore replaced); move it away, then retry`);
    }
  }
  const moved: { dir: string; names: string[] }[] = [];
  for (const dir of folders) {
    const names = await entries(dir);
    if (!names.length) continue;
    await mkdir(join(dir, ASIDE), { mode: 0o700 });
    for (const n of names) await rename(join(dir, n), join(dir, ASIDE, n));
    moved.push({ dir, names });
  }
  return {
    putBack: async () => {
      try {
        await emptyTarget(config);
        for (const { dir, names } of moved) {
          for (const n of names) await rename(join(dir, ASIDE, n), join(dir, n));
          await rmdir(join(dir, ASIDE));
        }
      } catch (e) {
        throw new Error(`the restore failed and putting the previous install back failed too (${(e as Error).message}); it is in ${moved.map((m) => join(m.dir, ASIDE)).join(' and ')}`);
      }
    },
    drop: async () => {
      for (const { dir } of moved) await rm(join(dir, ASIDE), { recursive: true, force: true });
    },
  };
}

/** Writes operator files (home, checkpoint stores) below `base`, by path: new entries only. */
export function operatorWriter(base: string) {
  const pathOf = (rel: string) => join(base, ...archivePath(rel));
  return {
    directory: async (rel: string, mode: number) => {
      await mkdir(pathOf(rel), { recursive: true, mode: mode & 0o777 });
    },
    file: async (rel: string, mode: number, mtime: Date, content: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) => {
      const path = pathOf(rel);
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      const fh = await open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode & 0o777);
      await fillFile(fh, mode, mtime, content).finally(() => fh.close());
    },
    symlink: async (rel: string, target: string) => {
      const path = pathOf(rel);
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      await symlink(target, path);
    },
  };
}
