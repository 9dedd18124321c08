import { sessionHostDir } from '../../src/core/files/paths.js';
import { build, type TestApp } from './app.js';
import { createSession } from './chat.js';

type T = Parameters<typeof build>[0];

/** URL-encode each segment of a workspace path. */
export const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');

export interface FilesFixture {
  app: TestApp;
  /** The session id, its host folder and its REST base path. */
  id: string;
  dir: string;
  base: string;
  put(path: string, content: string): Promise<Response>;
}

/** A fresh app with one session of the admin user. */
export async function filesFixture(t: T, env: Record<string, string> = {}): Promise<FilesFixture> {
  const app = await build(t, env);
  const id = await createSession(app);
  const userId = (await (await app.api('/api/auth/me')).json()).id;
  const base = `/api/sessions/${id}`;
  return {
    app,
    id,
    dir: sessionHostDir(app.home, userId, id),
    base,
    put: (path, content) => app.api(`${base}/files/${enc(path)}`, { method: 'PUT', json: { content } }),
  };
}

/** A multipart upload body: `files` parts (content, file name), then `paths` when given. */
export function uploadForm(files: [content: BlobPart, name: string][], paths?: unknown): FormData {
  const fd = new FormData();
  for (const [content, name] of files) fd.append('files', new Blob([content]), name);
  if (paths !== undefined) fd.append('paths', typeof paths === 'string' ? paths : JSON.stringify(paths));
  return fd;
}
