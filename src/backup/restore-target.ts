/**
 * Where a restore goes and whether it may: the home (and a workspaces folder outside it) must be
 * empty, the database must hold no install, and no `up` may serve the home; `--force` empties
 * them first. Files a failed restore wrote are removed again, so a refused or broken restore
 * leaves an empty target as it found it.
 */
import { mkdir, open, readdir, rm, symlink } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { constants } from 'node:fs';
import type { Config } from '../config/index.js';
import { servingUrl } from '../cli/served.js';
import { archivePath, fillFile } from '../files/tree-io.js';
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

/** Removes everything inside the target folders (--force before a restore, or after a failed one). */
export async function emptyTarget(config: Config): Promise<void> {
  for (const dir of targetFolders(config)) {
    for (const name of await entries(dir)) await rm(join(dir, name), { recursive: true, force: true });
  }
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
