import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { PathEscapeError, NotAFolderError, type Entry } from '../../files/confine.js';
import { openRead, writeWhole, type Owner } from '../../files/entry-ops.js';
import { readLines } from '../../files/read-lines.js';
import { defineTool } from '../define.js';
import { ToolError, type ToolContext } from '../types.js';
import { globTool } from './glob.js';
import { grepTool } from './grep.js';
import { guardOpened } from './guard.js';

const MAX_LINES = 2000;
const MAX_LINE = 2000;
/** Read scans at most this much of a file to reach the lines asked for. */
const READ_SCAN_BYTES = 256 * 1024 * 1024;
/** Edit holds the whole file in memory: larger files are edited with Bash. */
const EDIT_MAX_BYTES = 10 * 1024 * 1024;

/** fs and confinement failures as errors the model can act on. */
function toolError(e: unknown, file_path: string): unknown {
  if (e instanceof ToolError || e instanceof PathEscapeError) return e;
  if (e instanceof NotAFolderError) return new ToolError(e.message);
  switch ((e as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return new ToolError(`File does not exist: ${file_path}`);
    case 'EISDIR':
      return new ToolError(`${file_path} is a directory; use Glob or Bash ls to list it`);
    case 'ENXIO':
      return new ToolError(`${file_path} is not a regular file (a FIFO, socket or device); it cannot be read or written here`);
    case 'ENOTDIR':
      return new ToolError(`a parent of ${file_path} is not a directory`);
    case 'ELOOP':
      return new ToolError(`${file_path}: a symbolic link is in the way; it is not followed`);
    case 'ENOSPC':
    case 'EDQUOT':
      return new ToolError(`no space left on the disk to write ${file_path}; the file was left as it was`);
    case 'QUOTA_EXCEEDED':
      return new ToolError(`${file_path}: ${(e as Error).message}; the file was left as it was. Remove files you no longer need first`);
  }
  return e;
}

/** Walk `file_path` in the session folder (confined, links resolved step by step) and use the entry. */
async function withEntry<T>(ctx: ToolContext, file_path: string, opts: { mkdirs?: boolean; owner?: Owner; write?: boolean }, fn: (e: Entry) => Promise<T>): Promise<T> {
  try {
    return await ctx.workspace.folder.with(async (s) => {
      const e = await s.walk(file_path, { follow: true, mkdirs: opts.mkdirs, owner: opts.owner });
      return (async () => {
        if (opts.write) await guardOpened(ctx, e, true);
        return fn(e);
      })().finally(() => e.close());
    });
  } catch (e) {
    throw toolError(e, file_path);
  }
}

/** Open a regular file for reading (`write`: to change it after); binary files are refused. */
async function openText(ctx: ToolContext, file_path: string, write = false): Promise<{ fh: FileHandle; size: number; rel: string }> {
  const { fh, rel } = await withEntry(ctx, file_path, {}, async (e) => {
    const fh = await openRead(e);
    try {
      await guardOpened(ctx, e, write, fh);
    } catch (err) {
      await fh.close();
      throw err;
    }
    return { fh, rel: (await e.opened(fh)) ?? e.rel };
  });
  const { size } = await fh.stat();
  const head = Buffer.alloc(Math.min(size, 8000));
  await fh.read(head, 0, head.length, 0);
  if (head.includes(0)) {
    await fh.close();
    throw new ToolError(`${file_path} is a binary file (${size} bytes); it cannot be shown as text`);
  }
  return { fh, size, rel };
}

/** Files and folders the tools create belong to the computer's user (the docker image runs as non-root). */
async function ownerOf(ctx: ToolContext): Promise<Owner | undefined> {
  return (await ctx.workspace.computer().catch(() => null))?.owner;
}

export const readTool = defineTool({
  name: 'Read',
  description:
    'Read a text file of the workspace. Returns numbered lines (cat -n format). Use offset (1-based line) and limit for large files; at most 2000 ' +
    'lines and 2000 characters per line are returned.',
  provider: 'file_ops',
  parallel: true,
  input: z
    .object({
      file_path: z.string().describe('Path relative to the workspace, or absolute inside it'),
      offset: z.number().int().min(1).describe('First line to read (1-based)').optional(),
      limit: z.number().int().min(1).describe('Number of lines to read').optional(),
    })
    .strict(),
  async execute({ file_path, offset = 1, limit = MAX_LINES }, ctx) {
    const { fh, size } = await openText(ctx, file_path);
    let w: Awaited<ReturnType<typeof readLines>>;
    try {
      if (size === 0) return `(${file_path} is empty)`;
      w = await readLines(fh, offset, Math.min(limit, MAX_LINES), MAX_LINE, READ_SCAN_BYTES);
    } finally {
      await fh.close();
    }
    if (!w.lines.length) {
      if (!w.ended) throw new ToolError(`offset ${offset} is beyond the first ${READ_SCAN_BYTES} bytes of ${file_path}; use Bash (e.g. sed -n) to read that far`);
      throw new ToolError(`offset ${offset} is past the end of ${file_path} (${w.total} lines)`);
    }
    const body = w.lines.map((l, i) => `${String(offset + i).padStart(6)}\t${w.cut[i] ? l + '… [line truncated]' : l}`).join('\n');
    return w.more ? `${body}\n\n[more lines follow; read on with offset ${offset + w.lines.length}]` : body;
  },
});

export const writeTool = defineTool({
  name: 'Write',
  description: 'Write a file of the workspace, replacing it if it exists. Parent folders are created.',
  provider: 'file_ops',
  input: z.object({ file_path: z.string(), content: z.string() }).strict(),
  async execute({ file_path, content }, ctx) {
    const owner = await ownerOf(ctx);
    const { created, rel } = await withEntry(ctx, file_path, { mkdirs: true, owner, write: true }, async (e) => ({ ...(await writeWhole(e, content, { owner })), rel: e.rel }));
    return `${created ? 'Created' : 'Updated'} ${rel} (${Buffer.byteLength(content)} bytes)`;
  },
});

export const editTool = defineTool({
  name: 'Edit',
  description: 'Replace old_string with new_string in a file. old_string must occur exactly once unless replace_all is true; include enough surrounding context to make it unique.',
  provider: 'file_ops',
  input: z.object({ file_path: z.string(), old_string: z.string().min(1), new_string: z.string(), replace_all: z.boolean().optional() }).strict(),
  async execute({ file_path, old_string, new_string, replace_all }, ctx) {
    if (old_string === new_string) throw new ToolError('old_string and new_string are the same; nothing to change');
    const { fh, size, rel } = await openText(ctx, file_path, true);
    let text: string;
    try {
      if (size > EDIT_MAX_BYTES) throw new ToolError(`${file_path} is ${size} bytes, over the ${EDIT_MAX_BYTES} bytes Edit handles; use Bash (e.g. sed) instead`);
      const buf = Buffer.alloc(size);
      const { bytesRead } = await fh.read(buf, 0, size, 0);
      text = buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await fh.close();
    }
    const count = text.split(old_string).length - 1;
    if (count === 0) throw new ToolError(`old_string was not found in ${file_path}. Read the file and copy the exact text, including whitespace.`);
    if (count > 1 && !replace_all) throw new ToolError(`old_string occurs ${count} times in ${file_path}; add surrounding context to make it unique, or set replace_all`);
    const next = replace_all ? text.split(old_string).join(new_string) : text.replace(old_string, () => new_string);
    // Written through the same walk (the resolved path): a link planted meanwhile is not followed.
    await withEntry(ctx, rel, { write: true }, (e) => writeWhole(e, next));
    return `Edited ${rel}: ${replace_all ? count : 1} replacement(s)`;
  },
});

export const fileTools = [readTool, writeTool, editTool, globTool, grepTool];
