/**
 * Where a restore goes and whether it may: the home (and a workspaces folder outside it) must be
 * empty, the database must hold no install, and no `up` may serve the home. `--force` first sets
 * what is there aside (renamed into ASIDE inside each target folder: same file system, no copy),
 * and drops it only once the restore committed; a restore that fails puts it back, so a broken
 * archive never costs the install it was meant to replace. (The database of DATABASE_URL is
 * emptied inside the restore's own transaction, which a failure rolls back.) The archive's files
 * are written into a fresh staging folder (STAGING) and moved into place only once the archive
 * proved whole; a failed restore removes what it wrote (the staging folder, the embedded database)
 * and the folders it made, so a refused or broken restore leaves the target as it was.
 */
import { lstat, mkdir, open, readdir, rename, rm, rmdir, type FileHandle } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { constants } from 'node:fs';
import type { Config } from '../../platform/config/index.js';
import { servingUrl } from '../../cli/served.js';
import { at } from '../../core/files/confine.js';
import { SNAPSHOTS } from './archive.js';
import { StagedTree } from './staged-tree.js';
import { connect, holdsData } from './table-copy.js';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

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

/** Where a restore writes the archive's files until it committed: a fresh folder inside each target folder. */
export const STAGING = '.agentsvc-restore-staging';

export interface Staging {
  /** home/ of the archive: AGENTSVC_HOME's own files. */
  home: StagedTree;
  /** snapshots/ and users/ of the archive, as `.snapshots/...` and `<user id>/...`: the workspaces root. */
  workspaces: StagedTree;
  /** After every check passed, before the database commits: what was staged moved into place. */
  commit(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Makes the staging folders (mode 700, refused when one exists: they are made fresh) and opens
 * them O_NOFOLLOW: every entry is written below these descriptors (staged-tree.ts), and moved into
 * the target only once the archive proved whole (trailer, checksum, row counts). A failed restore
 * removes them with the rest of what it wrote (emptyTarget).
 */
export async function stage(config: Config): Promise<Staging> {
  const folders = targetFolders(config);
  const opened: FileHandle[] = [];
  const openNew = async (parent: string | FileHandle, name: string, mode?: number) => {
    const path = typeof parent === 'string' ? join(parent, name) : at(parent, name);
    await mkdir(path, { mode });
    const fh = await open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    opened.push(fh);
    return fh;
  };
  try {
    const roots: FileHandle[] = [];
    for (const dir of folders) {
      await mkdir(dir, { recursive: true });
      roots.push(await openNew(dir, STAGING, 0o700));
    }
    const homeRoot = await openNew(roots[0], 'home', 0o700);
    const wsRoot = await openNew(roots.at(-1)!, 'workspaces', 0o700);
    // Made as the old restore made it (the service makes it so too): the operator's only.
    await mkdir(at(wsRoot, SNAPSHOTS), { mode: 0o700 });
    const home = new StagedTree(homeRoot, (rel) => `home/${rel}`, 0o700);
    const workspaces = new StagedTree(wsRoot, (rel) => (rel.startsWith(`${SNAPSHOTS}/`) ? `snapshots/${rel.slice(SNAPSHOTS.length + 1)}` : `users/${rel}`));
    const moveAll = async (from: FileHandle, to: string) => {
      await mkdir(to, { recursive: true });
      for (const name of await readdir(at(from))) await rename(at(from, name), join(to, name));
    };
    return {
      home,
      workspaces,
      commit: async () => {
        await home.close();
        await workspaces.close();
        // The workspaces first: a workspaces root inside the home is not one of home/'s names.
        await moveAll(wsRoot, config.workspaces);
        await moveAll(homeRoot, config.home);
        await rmdir(at(roots.at(-1)!, 'workspaces'));
        await rmdir(at(roots[0], 'home'));
        for (const dir of folders) await rmdir(join(dir, STAGING));
      },
      close: async () => {
        await home.close();
        await workspaces.close();
        for (const fh of opened.splice(0)) await fh.close().catch(() => {});
      },
    };
  } catch (e) {
    for (const fh of opened.splice(0)) await fh.close().catch(() => {});
    throw e;
  }
}

/**
 * The target folders and their parents that do not exist yet, deepest first: a failed restore
 * removes the ones it made (when empty), so the target is left as it was.
 */
export async function missingFolders(config: Config): Promise<string[]> {
  const missing = new Set<string>();
  for (const dir of targetFolders(config)) {
    for (let d = dir; d !== dirname(d); d = dirname(d)) {
      if (
        await lstat(d).then(
          () => true,
          () => false,
        )
      )
        break;
      missing.add(d);
    }
  }
  return [...missing].sort((a, b) => b.length - a.length);
}
