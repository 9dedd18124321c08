import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { defineTool } from '../define.js';
import { ToolError } from '../types.js';
import { compileGlob, eachFile, leftOut, MAX_SEARCH_FOLDERS, slicer } from './glob.js';

/** Bounds of one search; past them the result says what was left out. */
export const GREP_LIMITS = {
  /** The pattern runs in a worker that is terminated after this long. */
  timeoutMs: 20_000,
  maxPatternChars: 1000,
  maxFiles: 50_000,
  /** Bytes read from the start of each file. */
  maxFileBytes: 4 * 1024 * 1024,
  /** Bytes read over all files. */
  maxTotalBytes: 256 * 1024 * 1024,
  /** Longer lines are searched in their first this many characters. */
  maxLineChars: 10_000,
  shownLineChars: 2000,
};

interface WorkerResult {
  hits: [number, number, [number, string][]][];
  scanned: number;
  cutFiles: number;
  longLines: number;
  skippedFiles: number;
}

/** Runs the search in a worker thread; rejects with a ToolError at the time limit, with the abort reason on abort. */
function search(data: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<WorkerResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./grep-worker.mjs', import.meta.url), { workerData: data, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: 512 } });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(
            new ToolError(
              `Grep stopped after ${timeoutMs / 1000} s without finishing. The pattern may backtrack badly (nested quantifiers such as (a+)+ or (.*)*), ` +
                'or the search is too wide: simplify the pattern, or narrow it with path or glob.',
            ),
          ),
        ),
      timeoutMs,
    );
    const onAbort = () => finish(() => reject(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (m: WorkerResult) => finish(() => resolve(m)));
    worker.once('error', (e) => finish(() => reject(new ToolError(`Grep failed: ${e.message}`))));
    worker.once('exit', (code) => finish(() => reject(new ToolError(`Grep failed: the search ended early (exit ${code})`))));
  });
}

export const grepTool = defineTool({
  name: 'Grep',
  description:
    'Search file contents with a regular expression (JavaScript syntax). output_mode: files_with_matches (default), content (matching lines; -n adds ' +
    'line numbers) or count. Filter files with glob; -i ignores case. ' +
    `Each file is searched in its first ${GREP_LIMITS.maxFileBytes / 1024 / 1024} MiB, each line in its first ${GREP_LIMITS.maxLineChars} characters; ` +
    `a search stops after ${GREP_LIMITS.timeoutMs / 1000} s.`,
  provider: 'file_ops',
  parallel: true,
  input: z
    .object({
      pattern: z.string().min(1).max(GREP_LIMITS.maxPatternChars),
      path: z.string().optional(),
      glob: z.string().optional(),
      output_mode: z.enum(['content', 'files_with_matches', 'count']).optional(),
      '-i': z.boolean().optional(),
      '-n': z.boolean().optional(),
      head_limit: z.number().int().min(1).optional(),
    })
    .strict(),
  async execute(args, ctx) {
    const flags = args['-i'] ? 'i' : '';
    if (args.pattern.length > GREP_LIMITS.maxPatternChars) throw new ToolError(`pattern is longer than ${GREP_LIMITS.maxPatternChars} characters`);
    try {
      new RegExp(args.pattern, flags); // compiling never backtracks; only matching runs in the worker
    } catch (e) {
      throw new ToolError(`invalid regular expression: ${(e as Error).message}`);
    }
    const filter = args.glob ? compileGlob(args.glob.includes('/') ? args.glob : `**/${args.glob}`) : null;
    const mode = args.output_mode ?? 'files_with_matches';
    const limit = args.head_limit ?? 500;
    const files: string[] = [];
    const names: string[] = [];
    const breathe = slicer();
    // The folders stay open (by descriptor) until the search is done: the worker reads each file
    // through its folder's descriptor, O_NOFOLLOW, never by a host path.
    const found = await eachFile(
      ctx,
      args.path ?? '.',
      { max: GREP_LIMITS.maxFiles, skipHeavy: true },
      async (f) => {
        if (!filter || filter(f.sub)) {
          files.push(f.path);
          names.push(f.rel);
        }
        await breathe();
      },
      async (walked) => ({
        walked,
        r: files.length ? await search({ ...GREP_LIMITS, files, pattern: args.pattern, flags, content: mode === 'content', limit }, ctx.signal, GREP_LIMITS.timeoutMs) : null,
      }),
    );
    if (!found.r) return `No matches found${leftOut(found.walked.left)}`;
    const { r } = found;
    const out: string[] = [];
    for (const [f, count, lines] of r.hits) {
      const name = names[f];
      if (mode === 'files_with_matches') out.push(name);
      else if (mode === 'count') out.push(`${name}:${count}`);
      else for (const [n, l] of lines) out.push(`${name}:${args['-n'] ? `${n}:` : ''}${l}`);
    }
    const notes: string[] = [];
    if (out.length >= limit) notes.push(`[stopped at ${limit} results; narrow the pattern, path or glob]`);
    if (r.cutFiles) notes.push(`[${r.cutFiles} file(s) larger than ${GREP_LIMITS.maxFileBytes} bytes were searched in their beginning only]`);
    if (r.longLines) notes.push(`[${r.longLines} line(s) longer than ${GREP_LIMITS.maxLineChars} characters were searched in their beginning only]`);
    if (found.walked.stopped) notes.push(`[the search stopped at ${GREP_LIMITS.maxFiles} files or ${MAX_SEARCH_FOLDERS} folders; narrow path or glob]`);
    if (r.skippedFiles) notes.push(`[${r.skippedFiles} file(s) not searched: the search reads at most ${GREP_LIMITS.maxTotalBytes} bytes; narrow path or glob]`);
    const body = out.length ? out.slice(0, limit).join('\n') : 'No matches found';
    return `${notes.length ? `${body}\n\n${notes.join('\n')}` : body}${leftOut(found.walked.left)}`;
  },
});
