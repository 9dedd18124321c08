import type { FileHandle } from 'node:fs/promises';
import { type Entry, type OpenSession, SessionFolder } from '../../core/files/confine.js';
import { openRead, statEntry } from '../../core/files/entry-ops.js';

/** What a request for a published app resolves to. */
export type Served = { kind: 'file'; fh: FileHandle; rel: string } | { kind: 'slash' } | null;

/** A path segment the public never reaches: `.`/`..`, hidden files (.env, .skills, .git), odd bytes. */
const hidden = (seg: string) => seg.startsWith('.') || seg.includes('\0') || seg.includes('\\');

/** Inside `dir` (workspace-relative, '' = the root), and no hidden segment on the way. */
function within(rel: string, dir: string): boolean {
  if (dir && rel !== dir && !rel.startsWith(`${dir}/`)) return false;
  return !rel.split('/').some((s) => s !== '' && hidden(s));
}

async function walkInside(s: OpenSession, path: string, dir: string): Promise<Entry | null> {
  const e = await s.walk(path, { follow: true }).catch(() => null);
  if (!e) return null;
  if (!within(e.rel, dir)) {
    await e.close();
    return null;
  }
  return e;
}

/**
 * Resolve `path` (the URL's rest, already decoded once by the router) inside the published folder
 * `dir` of the session. Confinement is the file endpoints' walk (component by component, O_NOFOLLOW,
 * links resolved by us and kept inside the session folder), then the canonical result must lie in
 * `dir` and name nothing hidden. Anything else, missing or odd is null (404); a folder is its
 * index.html, never a listing.
 */
export async function resolveAppFile(workspaces: string, userId: string, sessionId: string, dir: string, path: string): Promise<Served> {
  const segs = path.split('/');
  if (segs.some((s) => s !== '' && hidden(s))) return null;
  const folder = SessionFolder.of(workspaces, userId, sessionId);
  const s = await folder.open(false).catch(() => null);
  if (!s) return null;
  try {
    const base = dir ? `${dir}/${path}` : path;
    let e = await walkInside(s, base, dir);
    if (!e) return null;
    try {
      const st = await statEntry(e);
      if (st.isDirectory()) {
        if (path !== '' && !path.endsWith('/')) return { kind: 'slash' };
        await e.close();
        e = await walkInside(s, `${base.replace(/\/+$/, '')}/index.html`, dir);
        if (!e) return null;
      }
      const fh = await openRead(e).catch(() => null);
      return fh && { kind: 'file', fh, rel: e.rel };
    } finally {
      await e?.close();
    }
  } finally {
    await s.close();
  }
}
