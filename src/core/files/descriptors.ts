/**
 * Folders reached through open descriptors (confine.ts): the kernel path of a name inside an open
 * folder, and a user's or session's folder opened as a real folder, never through a link.
 * Linux only (/proc), like the runners.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, type FileHandle } from 'node:fs/promises';
import { NotAFolderError } from './confine-paths.js';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
/** A real folder, never a link standing in its place. */
export const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** The kernel path of `name` inside the open folder `dir` (of `dir` itself without a name). */
export const at = (dir: FileHandle, name?: string | null): string => `/proc/self/fd/${dir.fd}${name ? `/${name}` : ''}`;

export async function closeAll(handles: FileHandle[]): Promise<void> {
  await Promise.all(handles.splice(0).map((h) => h.close().catch(() => {})));
}

export const isLink = (path: string) => lstat(path).then((st) => st.isSymbolicLink(), () => false);

/** Open `name` in `parent` as a real folder (not a link); mkdir it first when asked. */
export async function openOwnFolder(parent: FileHandle, name: string, create: boolean, what: string): Promise<FileHandle | null> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await open(at(parent, name), DIR_FLAGS);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && create && attempt < 3) {
        await mkdir(at(parent, name)).catch((m) => {
          if (m.code !== 'EEXIST') throw m;
        });
        continue;
      }
      if (code === 'ENOENT') return null;
      // O_DIRECTORY|O_NOFOLLOW on a link gives ELOOP or ENOTDIR depending on the kernel: tell them apart.
      if (code === 'ELOOP' || code === 'ENOTDIR') {
        const link = await isLink(at(parent, name));
        throw new NotAFolderError(link ? `the ${what} folder is a symbolic link, not a directory; it is not followed` : `the ${what} folder is not a directory`);
      }
      throw e;
    }
  }
}
