import { lstat, readdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** Folders that are rebuilt rather than restored (listed in the snapshot's exclude file). */
export const EXCLUDED_DIRS = ['.git', 'node_modules', '.venv', 'venv', '__pycache__', '.cache', '.npm', '.mypy_cache', '.pytest_cache'];

export interface Skipped {
  path: string;
  size: number;
  reason: string;
}

export interface Scanned {
  skipped: Skipped[];
  /** What git would see: equal signatures mean an unchanged workspace. */
  signature: string;
  /** Files and links found (heavy folders not walked). */
  entries: number;
  /** A .gitignore of the workspace's own was found. */
  gitignores: boolean;
  /** Files kept that lie inside a folder holding its own repository. */
  inNested: string[];
}

/** The signature of a folder with no entries. */
export const EMPTY_SIGNATURE = createHash('sha1').digest('hex');

/**
 * Files too big to snapshot, and past maxFiles; heavy folders are not walked. Also a signature of
 * what git would see (path, type, size, inode, mtime and ctime in nanoseconds of every file and
 * link): equal signatures mean an unchanged workspace, whose checkpoint needs no git at all.
 * `dir` is the verified session folder (its open descriptor's path).
 */
export async function scanWorkspace(dir: string, limits: { fileLimit: number; maxFiles?: number }): Promise<Scanned> {
  const skipped: Skipped[] = [];
  const hash = createHash('sha1');
  let count = 0;
  let entries = 0;
  let gitignores = false;
  const nested: string[] = [];
  const kept: string[] = [];
  const max = limits.maxFiles ?? 100_000;
  const walk = async (rel: string) => {
    for (const e of await readdir(join(dir, rel), { withFileTypes: true }).catch(() => [])) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.name === '.git' && rel) nested.push(rel);
      if (e.isDirectory()) {
        if (!EXCLUDED_DIRS.includes(e.name)) await walk(path);
      } else if (e.isFile() || e.isSymbolicLink()) {
        const st = await lstat(join(dir, path), { bigint: true }).catch(() => null);
        if (!st) continue;
        entries++;
        if (e.name === '.gitignore') gitignores = true;
        hash.update(`${path}\0${st.mode}:${st.size}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}\n`);
        if (!e.isFile()) {
          kept.push(path);
          continue;
        }
        const size = Number(st.size);
        if (size > limits.fileLimit) skipped.push({ path, size, reason: `over the snapshot file limit of ${limits.fileLimit} bytes` });
        else if (++count > max) skipped.push({ path, size, reason: `over ${max} files in one snapshot` });
        else kept.push(path);
      }
    }
  };
  await walk('');
  const inNested = nested.length ? kept.filter((p) => nested.some((n) => p.startsWith(`${n}/`))) : [];
  return { skipped, signature: hash.digest('hex'), entries, gitignores, inNested };
}
