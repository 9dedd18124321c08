import { readdir, lstat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

/** Glob pattern to RegExp: `**` any depth, `*` within a segment, `?`, `{a,b}`, `[...]`. */
export function globToRegExp(pattern: string): RegExp {
  let re = '';
  let inBrace = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        const slash = pattern[i + 2] === '/';
        re += slash ? '(?:.*/)?' : '.*';
        i += slash ? 2 : 1;
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '{') {
      inBrace++;
      re += '(?:';
    } else if (c === '}' && inBrace) {
      inBrace--;
      re += ')';
    } else if (c === ',' && inBrace) re += '|';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        re += '[' + pattern.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\') + ']';
        i = end;
      }
    } else re += c.replace(/[.+^$()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

const SKIP = new Set(['.git', 'node_modules']);

/** Files under `dir` (host path), as paths relative to it with `/`; symlinks are not followed. */
export async function* walk(dir: string, opts: { max?: number; skipHeavy?: boolean } = {}): AsyncGenerator<string> {
  const stack = [dir];
  let n = 0;
  while (stack.length) {
    const d = stack.pop()!;
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (!(opts.skipHeavy && SKIP.has(e.name))) stack.push(p);
      } else if (e.isFile()) {
        yield relative(dir, p).split(sep).join('/');
        if (opts.max && ++n >= opts.max) return;
      }
    }
  }
}

export async function mtime(path: string): Promise<number> {
  try {
    return (await lstat(path)).mtimeMs;
  } catch {
    return 0;
  }
}
