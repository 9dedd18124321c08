import type { SessionFiles, SessionScope } from '../../src/features/plugin-host/api.js';
import { parseSkill, SKILL_NAME } from './format.js';
import { INSTALLED_MARK, SESSION_DIR, SOURCE_MARK } from './library.js';

export const MAX_UPLOAD_FILES = 200;
const MAX_PATH = 255;
const MAX_DEPTH = 8;

/** A refused upload: `status` 422 (with the field at fault) or 413; nothing was written. */
export class UploadError extends Error {
  constructor(
    readonly status: 413 | 422,
    readonly loc: (string | number)[],
    message: string,
  ) {
    super(message);
  }
}

/** A path inside the skill folder: relative, no `..`, no empty or hidden marker parts. */
function checkPath(path: string, i: number): string {
  const loc = ['body', 'files', i, 'path'];
  if (!path || path.length > MAX_PATH) throw new UploadError(422, loc, `path must be 1-${MAX_PATH} characters`);
  if (path.includes('\0') || path.includes('\\')) throw new UploadError(422, loc, `${JSON.stringify(path)}: NUL and backslash are not allowed`);
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) throw new UploadError(422, loc, `${JSON.stringify(path)}: must be relative to the skill folder`);
  const parts = path.split('/');
  if (parts.length > MAX_DEPTH) throw new UploadError(422, loc, `${JSON.stringify(path)}: nested deeper than ${MAX_DEPTH}`);
  for (const p of parts) {
    if (p === '' || p === '.' || p === '..') throw new UploadError(422, loc, `${JSON.stringify(path)}: empty, "." and ".." parts are not allowed (the path must stay inside the skill folder)`);
    if (p === SOURCE_MARK || p === INSTALLED_MARK) throw new UploadError(422, loc, `${JSON.stringify(path)}: reserved name`);
  }
  return parts.join('/');
}

/**
 * skills:upload: a whole skill folder written to `.skills/<name>` of the session, replacing the
 * one there. Everything is checked before anything is written: the name, each path, the total
 * size, and SKILL.md's front matter (its name must equal `name`).
 */
export async function uploadSkill(
  files: SessionFiles,
  scope: SessionScope,
  input: { name: string; files: { path: string; content: string }[] },
  limitBytes: number,
): Promise<{ name: string; skill_dir: string; file_count: number; overwritten: boolean }> {
  const { name } = input;
  if (!SKILL_NAME.test(name)) throw new UploadError(422, ['body', 'name'], 'name must be 1-64 characters of a-z, 0-9 and -');
  if (!input.files.length) throw new UploadError(422, ['body', 'files'], 'a skill needs at least SKILL.md');
  if (input.files.length > MAX_UPLOAD_FILES) throw new UploadError(413, ['body', 'files'], `at most ${MAX_UPLOAD_FILES} files per skill`);
  const seen = new Set<string>();
  let total = 0;
  const checked = input.files.map((f, i) => {
    const path = checkPath(f.path, i);
    if (seen.has(path)) throw new UploadError(422, ['body', 'files', i, 'path'], `${path} is given twice`);
    seen.add(path);
    total += Buffer.byteLength(f.content, 'utf8');
    return { path, content: f.content };
  });
  if (total > limitBytes) throw new UploadError(413, ['body', 'files'], `the skill is ${total} bytes, over the limit of ${limitBytes} (AGENTSVC_SKILL_UPLOAD_LIMIT)`);
  const md = checked.find((f) => f.path === 'SKILL.md');
  if (!md) throw new UploadError(422, ['body', 'files'], 'SKILL.md is missing at the top of the skill folder');
  try {
    parseSkill(md.content, name);
  } catch (e) {
    throw new UploadError(422, ['body', 'files', checked.indexOf(md), 'content'], `SKILL.md: ${(e as Error).message}`);
  }
  const dir = `${SESSION_DIR}/${name}`;
  const overwritten = await files.list(scope, dir).then(() => true, () => false);
  await files.remove(scope, dir);
  for (const f of checked) await files.write(scope, `${dir}/${f.path}`, f.content, { executable: /^scripts\//.test(f.path) || f.content.startsWith('#!') });
  return { name, skill_dir: dir, file_count: checked.length, overwritten };
}
