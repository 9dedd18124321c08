/**
 * How a restore writes an archive's entries: below a folder it opened itself (a fresh staging
 * folder, see restore-target.ts), every component of every entry's path opened through its
 * parent's descriptor with O_DIRECTORY|O_NOFOLLOW (`at` of the confined layer,
 * src/core/files/confine.ts: the kernel resolves `/proc/self/fd/N/name` from that open folder, like
 * openat), the entry itself created through its parent's descriptor: a file O_CREAT|O_EXCL|
 * O_NOFOLLOW, a folder by mkdir, a link by symlink (never followed). A link or a file standing where
 * a folder of the path should be is refused, not resolved: unlike the confined walk (which resolves
 * a user's links inside the folder, as the file tools must), a backup never holds an entry below a
 * link, so any archive that has one was made to escape. Written here rather than with
 * tree-io.ts' writeUserTree, which walks parents with that link-resolving walk.
 * Docs: docs/backup.md (Restoring an archive you did not make).
 */
import { constants } from 'node:fs';
import { mkdir, open, symlink, type FileHandle } from 'node:fs/promises';
import { at } from '../../core/files/confine.js';
import { fillFile } from '../../core/files/tree-io.js';
import { EntryRefused } from './archive.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** Set-user-ID and set-group-ID: never restored on a file (it would belong to the user running restore). */
const SET_ID = 0o6000;

const code = (e: unknown) => (e as NodeJS.ErrnoException).code;

export class StagedTree {
  /** The folders of the last entry's path, open: archives list a folder's entries together. */
  private readonly chain: { name: string; fh: FileHandle }[] = [];

  constructor(
    /** The open folder entries are written below (opened by the caller, O_NOFOLLOW). */
    private readonly root: FileHandle,
    /** The archive's name of a path below `root`, for errors. */
    private readonly shown: (rel: string) => string,
    /** Mode of folders made because an entry is inside them (undefined: 0777 less the umask). */
    private readonly dirMode?: number,
  ) {}

  /** The open folder `parts` names, its missing folders made; a link or file on the way is refused. */
  private async folder(parts: string[], shown: string): Promise<FileHandle> {
    let i = 0;
    while (i < this.chain.length && i < parts.length && this.chain[i].name === parts[i]) i++;
    for (const { fh } of this.chain.splice(i)) await fh.close().catch(() => {});
    let dir = i ? this.chain[i - 1].fh : this.root;
    for (; i < parts.length; i++) {
      const fh = await this.openFolder(dir, parts[i], shown, parts.slice(0, i + 1).join('/'));
      this.chain.push({ name: parts[i], fh });
      dir = fh;
    }
    return dir;
  }

  private async openFolder(dir: FileHandle, name: string, shown: string, rel: string): Promise<FileHandle> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await open(at(dir, name), DIR_FLAGS);
      } catch (e) {
        // O_DIRECTORY|O_NOFOLLOW gives ELOOP on a link, ENOTDIR on a file (or a link, on some kernels).
        if (code(e) === 'ELOOP' || code(e) === 'ENOTDIR') {
          throw new EntryRefused(
            `the archive is refused: entry ${JSON.stringify(shown)} goes through ${this.shown(rel)}, which is a symbolic link or a file, not a folder; nothing is followed`,
          );
        }
        if (code(e) !== 'ENOENT' || attempt) throw e;
        await mkdir(at(dir, name), { mode: this.dirMode }).catch((m) => {
          if (code(m) !== 'EEXIST') throw m;
        });
      }
    }
  }

  private async parentOf(rel: string): Promise<{ dir: FileHandle; name: string; shown: string }> {
    const parts = rel.split('/');
    const name = parts.pop()!;
    const shown = this.shown(rel);
    return { dir: await this.folder(parts, shown), name, shown };
  }

  private duplicate(e: unknown, shown: string): never {
    if (code(e) === 'EEXIST') throw new EntryRefused(`the archive is refused: entry ${JSON.stringify(shown)} is in it twice`);
    throw e;
  }

  /** A folder (it may exist already, made for an entry inside it): its mode is set. */
  async directory(rel: string, mode: number): Promise<void> {
    const { dir, name, shown } = await this.parentOf(rel);
    await mkdir(at(dir, name), { mode: mode & 0o777 }).catch((e) => {
      if (code(e) !== 'EEXIST') throw e;
    });
    const fh = await open(at(dir, name), DIR_FLAGS).catch((e) => this.duplicate(code(e) === 'ELOOP' || code(e) === 'ENOTDIR' ? { code: 'EEXIST' } : e, shown));
    await fh.chmod(mode & 0o7777).finally(() => fh.close());
  }

  /** A new file filled from `content`, then given `mode` (less set-ID bits) and `mtime`. */
  async file(rel: string, mode: number, mtime: Date, content: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<void> {
    const { dir, name, shown } = await this.parentOf(rel);
    const safe = mode & 0o7777 & ~SET_ID;
    const fh = await open(at(dir, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, safe & 0o777).catch((e) => this.duplicate(e, shown));
    await fillFile(fh, safe, mtime, content).finally(() => fh.close());
  }

  /** A link, as stored: its target is never resolved here. */
  async symlink(rel: string, target: string): Promise<void> {
    const { dir, name, shown } = await this.parentOf(rel);
    await symlink(target, at(dir, name)).catch((e) => this.duplicate(e, shown));
  }

  async close(): Promise<void> {
    for (const { fh } of this.chain.splice(0)) await fh.close().catch(() => {});
  }
}
