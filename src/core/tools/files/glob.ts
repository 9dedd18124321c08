import { lstat } from 'node:fs/promises';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { z } from 'zod';
import { statEntry } from '../../files/entry-ops.js';
import { defineTool } from '../define.js';
import { ToolError, type ToolContext } from '../types.js';
import { guardOpened } from './guard.js';

/**
 * Globs are matched by a set-of-positions simulation, never by a backtracking RegExp: the old
 * translation to `(?:.*\/)?` groups took seconds per path for patterns with many `**` segments.
 * Cost per path is O(path length × pattern tokens), with the pattern bounded below.
 */
export const MAX_GLOB_CHARS = 512;
export const MAX_GLOB_SEGMENTS = 64;
/** Brace alternatives after expansion, and their total tokens. */
export const MAX_GLOB_ALTERNATIVES = 64;
const MAX_GLOB_TOKENS = 2048;

type Tok =
  | { k: 'lit'; c: string }
  | { k: 'one' } // ?
  | { k: 'star' } // * within a segment
  | { k: 'any' } // ** not followed by /
  | { k: 'dirs' } // **/ : empty, or anything ending with /
  | { k: 'class'; neg: boolean; ranges: [number, number][] };

/** Index of the `]` closing a class opened at `i`, or -1. */
const classEnd = (p: string, i: number) => {
  const end = p.indexOf(']', i + 1);
  return end > i + 1 ? end : -1; // `[]` is two literal characters
};

/** `{a,b}` alternatives, nested, expanded; a `{` without its `}` is literal. */
function expandBraces(p: string, out: string[]): void {
  let depth = 0;
  let open = -1;
  const commas: number[] = [];
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === '[' && classEnd(p, i) > 0) i = classEnd(p, i);
    else if (c === '{' && depth++ === 0) open = i;
    else if (c === ',' && depth === 1) commas.push(i);
    else if (c === '}' && depth > 0 && --depth === 0) {
      const cuts = [open, ...commas, i];
      for (let j = 0; j + 1 < cuts.length; j++) {
        expandBraces(p.slice(0, open) + p.slice(cuts[j] + 1, cuts[j + 1]) + p.slice(i + 1), out);
        if (out.length > MAX_GLOB_ALTERNATIVES) throw new ToolError(`glob has more than ${MAX_GLOB_ALTERNATIVES} brace alternatives; use fewer {a,b} groups`);
      }
      return;
    }
  }
  if (depth > 0 && open >= 0) {
    // Unclosed `{`: literal, but braces after it may still be real groups.
    const rest: string[] = [];
    expandBraces(p.slice(open + 1), rest);
    for (const r of rest) out.push(p.slice(0, open + 1) + r);
    return;
  }
  out.push(p);
}

function tokenize(p: string): Tok[] {
  const toks: Tok[] = [];
  const chars = Array.from(p);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === '*') {
      if (chars[i + 1] === '*') {
        const slash = chars[i + 2] === '/';
        toks.push({ k: slash ? 'dirs' : 'any' });
        i += slash ? 2 : 1;
      } else toks.push({ k: 'star' });
    } else if (c === '?') toks.push({ k: 'one' });
    else if (c === '[' && chars.indexOf(']', i + 1) > i + 1) {
      const end = chars.indexOf(']', i + 1);
      const body = chars.slice(i + 1, end);
      const neg = body[0] === '!' || body[0] === '^';
      const ranges: [number, number][] = [];
      for (let j = neg ? 1 : 0; j < body.length; j++) {
        const lo = body[j].codePointAt(0)!;
        if (body[j + 1] === '-' && j + 2 < body.length) {
          ranges.push([lo, body[j + 2].codePointAt(0)!]);
          j += 2;
        } else ranges.push([lo, lo]);
      }
      toks.push({ k: 'class', neg, ranges });
      i = end;
    } else toks.push({ k: 'lit', c });
  }
  return toks;
}

function matchTokens(toks: Tok[], path: string): boolean {
  const m = toks.length;
  let cur = new Uint8Array(m + 1);
  let nxt = new Uint8Array(m + 1);
  // Zero-width moves only go forward, so one ascending pass closes a state set.
  const close = (s: Uint8Array) => {
    for (let i = 0; i < m; i++) if (s[i] && (toks[i].k === 'star' || toks[i].k === 'any' || toks[i].k === 'dirs')) s[i + 1] = 1;
  };
  cur[0] = 1;
  close(cur);
  for (const c of path) {
    nxt.fill(0);
    let alive = false;
    for (let i = 0; i < m; i++) {
      if (!cur[i]) continue;
      const t = toks[i];
      const slash = c === '/';
      let stay = false, advance = false;
      if (t.k === 'lit') advance = t.c === c;
      else if (t.k === 'one') advance = !slash;
      else if (t.k === 'class') {
        const cp = c.codePointAt(0)!;
        advance = !slash && t.ranges.some(([lo, hi]) => cp >= lo && cp <= hi) !== t.neg;
      } else if (t.k === 'star') stay = !slash;
      else if (t.k === 'any') stay = true;
      else {
        // dirs
        stay = true;
        advance = slash;
      }
      if (stay) nxt[i] = 1;
      if (advance) nxt[i + 1] = 1;
      alive ||= stay || advance;
    }
    if (!alive) return false;
    close(nxt);
    [cur, nxt] = [nxt, cur];
  }
  return cur[m] === 1;
}

/** Compile a glob (`**` any depth, `*` within a segment, `?`, `{a,b}`, `[...]`) to a linear-time matcher. */
export function compileGlob(pattern: string): (path: string) => boolean {
  if (pattern.length > MAX_GLOB_CHARS) throw new ToolError(`glob is ${pattern.length} characters long; at most ${MAX_GLOB_CHARS} are allowed`);
  if (pattern.split('/').length > MAX_GLOB_SEGMENTS) throw new ToolError(`glob has more than ${MAX_GLOB_SEGMENTS} path segments; use a shorter pattern or the path argument`);
  const alternatives: string[] = [];
  expandBraces(pattern, alternatives);
  const compiled = alternatives.map(tokenize);
  if (compiled.reduce((n, t) => n + t.length, 0) > MAX_GLOB_TOKENS) throw new ToolError('glob is too complex once its {a,b} groups are expanded; simplify it');
  return (path) => compiled.some((toks) => matchTokens(toks, path));
}

export const HEAVY_FOLDERS = new Set(['.git', 'node_modules']);
/** Folders a search keeps open at once (each one a descriptor until the search ends). */
export const MAX_SEARCH_FOLDERS = 512;

/**
 * Regular files under `path` of the session folder, walked through descriptors (confine.ts): links
 * are never entered, and `path` itself is walked like every tool path. `fn` gets each file's path
 * relative to the session folder and a kernel path valid during the call. Returns whether the walk
 * stopped at a bound. A missing `path` has no files.
 */
export async function eachFile<T>(
  ctx: ToolContext,
  path: string,
  opts: { max: number; skipHeavy?: boolean },
  /** `rel`: relative to the session folder (what the model should use next); `sub`: to `path`. */
  fn: (file: { rel: string; sub: string; path: string }) => Promise<void> | void,
  /**
   * Runs while the folders are still open (the kernel paths given to `fn` are valid until it ends).
   * `left`: entries the tool policy's path rules left out (a folder counts once, unentered).
   */
  then: (walk: { stopped: boolean; left: number }) => Promise<T>,
): Promise<T> {
  return ctx.workspace.folder.with(async (s) => {
    const start = await s.walk(path, { follow: true }).catch((e) => {
      if (e.code === 'ENOENT') return null;
      throw e;
    });
    if (!start) return then({ stopped: false, left: 0 });
    try {
      // Decided on the folder (or file) actually opened, not on the path checked before the call.
      await guardOpened(ctx, start, false);
      const base = (await start.opened()) ?? start.rel;
      const guard = ctx.workspace.folder.pathGuard;
      const walk = { stopped: false, left: 0 };
      const leave = guard
        ? (sub: string) => {
            const out = guard(base ? `${base}/${sub}` : sub, false) !== null;
            if (out) walk.left++;
            return out;
          }
        : undefined;
      if ((await statEntry(start)).isFile()) {
        await fn({ rel: base, sub: start.name ?? '', path: start.path });
        return await then(walk);
      }
      const bounds = { max: opts.max, maxDirs: MAX_SEARCH_FOLDERS, skip: opts.skipHeavy ? HEAVY_FOLDERS : undefined, stopped: false, leave };
      for await (const f of s.files(start, bounds)) await fn({ rel: base ? `${base}/${f.rel}` : f.rel, sub: f.rel, path: f.path });
      walk.stopped = bounds.stopped;
      return await then(walk);
    } finally {
      await start.close();
    }
  });
}

/** The last line of a Grep or Glob result when path rules left entries out (none when 0). */
export function leftOut(n: number): string {
  return n > 0 ? `\n${n} entries left out by policy` : '';
}

export async function mtime(path: string): Promise<number> {
  try {
    return (await lstat(path)).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * Gives the event loop a turn once `sliceMs` of synchronous work has piled up, so a long search
 * delays other users' requests by at most about one slice.
 */
export function slicer(sliceMs = 10): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await yieldToLoop();
    since = performance.now();
  };
}

export const globTool = defineTool({
  name: 'Glob',
  description: 'Find files by glob pattern (e.g. "**/*.ts", "src/*.{js,ts}"), newest first. Returns workspace-relative paths.',
  provider: 'file_ops',
  parallel: true,
  input: z
    .object({
      pattern: z.string().min(1).max(MAX_GLOB_CHARS),
      path: z.string().describe('Folder to search (default: workspace root)').optional(),
    })
    .strict(),
  async execute({ pattern, path = '.' }, ctx) {
    const matches = compileGlob(pattern.replace(/^\.\//, ''));
    const hits: { p: string; m: number }[] = [];
    const breathe = slicer();
    const walked = await eachFile(
      ctx,
      path,
      { max: 50_000 },
      async (f) => {
        if (matches(f.sub)) hits.push({ p: f.rel || '.', m: await mtime(f.path) });
        await breathe();
        if (ctx.signal.aborted) throw ctx.signal.reason;
      },
      async (w) => w,
    );
    if (!hits.length) return `No files found${leftOut(walked.left)}`;
    hits.sort((a, b) => b.m - a.m);
    const list = hits.slice(0, 100).map((h) => h.p);
    const more = hits.length > 100 ? `\n\n[${hits.length - 100} more files; use a narrower pattern or path]` : '';
    return `${list.join('\n')}${more}${walked.stopped ? `\n[the search stopped at its bound of files or ${MAX_SEARCH_FOLDERS} folders; narrow the path]` : ''}${leftOut(walked.left)}`;
  },
});
