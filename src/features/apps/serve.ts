import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { type Entry, OpenSession, SessionFolder } from '../../core/files/confine.js';
import { openDir, openRead, statEntry } from '../../core/files/entry-ops.js';

/** What a request for a published app resolves to. */
export type Served = { kind: 'file'; fh: FileHandle; rel: string } | { kind: 'slash' } | null;

/** A path segment the public never reaches: `.`/`..`, hidden files (.env, .skills, .git), odd bytes. */
const hidden = (seg: string) => seg.startsWith('.') || seg.includes('\0') || seg.includes('\\');

/** No hidden segment on the way (`rel` is relative to the app's folder). */
const visible = (rel: string) => !rel.split('/').some((s) => s !== '' && hidden(s));

async function walkInside(s: OpenSession, path: string): Promise<Entry | null> {
  const e = await s.walk(path, { follow: true }).catch(() => null);
  if (!e) return null;
  if (!visible(e.rel)) {
    await e.close();
    return null;
  }
  return e;
}

/**
 * The published folder `dir` of the session, open as the root of a confined walk: the folder
 * itself must be a real folder (a link put in its place is not followed), and every walk from it
 * is the file layer's walk with this folder as its top, so a link inside that leads out of the
 * folder (`..`, another folder of the session, an absolute path) is refused even when it would
 * lead back in. Null when it is missing or not a folder.
 */
async function openAppFolder(folder: SessionFolder, dir: string): Promise<{ app: OpenSession; close(): Promise<void> } | null> {
  const s = await folder.open(false).catch(() => null);
  if (!s) return null;
  try {
    const top = await s.walk(dir);
    const d = await openDir(top).finally(() => top.close());
    // Absolute link targets map as for the session folder and are then walked from this folder:
    // at worst a 404, never an entry outside it.
    const app = new OpenSession(d.fh, join(s.real, dir), folder, []);
    return {
      app,
      close: async () => {
        await app.close();
        await d.close();
        await s.close();
      },
    };
  } catch {
    await s.close();
    return null;
  }
}

/**
 * Resolve `path` (the URL's rest, already decoded once by the router) inside the published folder
 * `dir` of the session: the file layer's confined walk (component by component, O_NOFOLLOW, links
 * resolved by us) rooted at that folder, so nothing outside it is reached; the result must name
 * nothing hidden. Anything else, missing or odd is null (404); a folder is its index.html, never a
 * listing.
 */
export async function resolveAppFile(workspaces: string, userId: string, sessionId: string, dir: string, path: string): Promise<Served> {
  const segs = path.split('/');
  if (segs.some((s) => s !== '' && hidden(s))) return null;
  const opened = await openAppFolder(SessionFolder.of(workspaces, userId, sessionId), dir);
  if (!opened) return null;
  const s = opened.app;
  try {
    let e = await walkInside(s, path);
    if (!e) return null;
    try {
      const st = await statEntry(e);
      if (st.isDirectory()) {
        if (path !== '' && !path.endsWith('/')) return { kind: 'slash' };
        await e.close();
        const folderPath = path.replace(/\/+$/, '');
        e = await walkInside(s, folderPath ? `${folderPath}/index.html` : 'index.html');
        if (!e) return null;
      }
      const fh = await openRead(e).catch(() => null);
      return fh && { kind: 'file', fh, rel: e.rel };
    } finally {
      await e?.close();
    }
  } finally {
    await opened.close();
  }
}
