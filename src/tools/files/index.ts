import { readFile, writeFile, mkdir, stat, chown } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { ToolError, type Tool, type ToolContext } from '../types.js';
import { globTool } from './glob.js';
import { grepTool } from './grep.js';

/** Workspace-relative display path (what the model should use next time). */
function shown(ctx: ToolContext, host: string): string {
  return relative(ctx.workspace.hostDir, host).split(sep).join('/') || '.';
}

async function readText(ctx: ToolContext, file_path: string): Promise<{ host: string; text: string }> {
  const host = await ctx.workspace.resolve(file_path);
  let st;
  try {
    st = await stat(host);
  } catch {
    throw new ToolError(`File does not exist: ${file_path}`);
  }
  if (st.isDirectory()) throw new ToolError(`${file_path} is a directory; use Glob or Bash ls to list it`);
  const buf = await readFile(host);
  if (buf.subarray(0, 8000).includes(0)) throw new ToolError(`${file_path} is a binary file (${buf.length} bytes); it cannot be shown as text`);
  return { host, text: buf.toString('utf8') };
}

/** Files the tools create belong to the computer's user (the docker image runs as non-root). */
async function own(ctx: ToolContext, host: string) {
  const owner = (await ctx.workspace.computer().catch(() => null))?.owner;
  if (owner) await chown(host, owner.uid, owner.gid).catch(() => {});
}

const MAX_LINES = 2000;
const MAX_LINE = 2000;

export const readTool: Tool<{ file_path: string; offset?: number; limit?: number }> = {
  name: 'Read',
  description:
    'Read a text file of the workspace. Returns numbered lines (cat -n format). Use offset (1-based line) and limit for large files; at most 2000 lines and 2000 characters per line are returned.',
  provider: 'file_ops',
  parallel: true,
  parameters: {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Path relative to the workspace, or absolute inside it' },
      offset: { type: 'integer', minimum: 1, description: 'First line to read (1-based)' },
      limit: { type: 'integer', minimum: 1, description: 'Number of lines to read' },
    },
    required: ['file_path'],
    additionalProperties: false,
  },
  async execute({ file_path, offset = 1, limit = MAX_LINES }, ctx) {
    const { text } = await readText(ctx, file_path);
    if (!text) return `(${file_path} is empty)`;
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const slice = lines.slice(offset - 1, offset - 1 + Math.min(limit, MAX_LINES));
    if (!slice.length) throw new ToolError(`offset ${offset} is past the end of ${file_path} (${lines.length} lines)`);
    const body = slice.map((l, i) => `${String(offset + i).padStart(6)}\t${l.length > MAX_LINE ? l.slice(0, MAX_LINE) + '… [line truncated]' : l}`).join('\n');
    const rest = lines.length - (offset - 1 + slice.length);
    return rest > 0 ? `${body}\n\n[${rest} more lines; read on with offset ${offset + slice.length}]` : body;
  },
};

export const writeTool: Tool<{ file_path: string; content: string }> = {
  name: 'Write',
  description: 'Write a file of the workspace, replacing it if it exists. Parent folders are created.',
  provider: 'file_ops',
  parameters: {
    type: 'object',
    properties: { file_path: { type: 'string' }, content: { type: 'string' } },
    required: ['file_path', 'content'],
    additionalProperties: false,
  },
  async execute({ file_path, content }, ctx) {
    const host = await ctx.workspace.resolve(file_path);
    const existed = await stat(host).then((s) => {
      if (s.isDirectory()) throw new ToolError(`${file_path} is a directory`);
      return true;
    }, () => false);
    await mkdir(dirname(host), { recursive: true });
    await writeFile(host, content);
    await own(ctx, host);
    return `${existed ? 'Updated' : 'Created'} ${shown(ctx, host)} (${Buffer.byteLength(content)} bytes)`;
  },
};

export const editTool: Tool<{ file_path: string; old_string: string; new_string: string; replace_all?: boolean }> = {
  name: 'Edit',
  description:
    'Replace old_string with new_string in a file. old_string must occur exactly once unless replace_all is true; include enough surrounding context to make it unique.',
  provider: 'file_ops',
  parameters: {
    type: 'object',
    properties: {
      file_path: { type: 'string' },
      old_string: { type: 'string', minLength: 1 },
      new_string: { type: 'string' },
      replace_all: { type: 'boolean' },
    },
    required: ['file_path', 'old_string', 'new_string'],
    additionalProperties: false,
  },
  async execute({ file_path, old_string, new_string, replace_all }, ctx) {
    if (old_string === new_string) throw new ToolError('old_string and new_string are the same; nothing to change');
    const { host, text } = await readText(ctx, file_path);
    const count = text.split(old_string).length - 1;
    if (count === 0) throw new ToolError(`old_string was not found in ${file_path}. Read the file and copy the exact text, including whitespace.`);
    if (count > 1 && !replace_all) throw new ToolError(`old_string occurs ${count} times in ${file_path}; add surrounding context to make it unique, or set replace_all`);
    await writeFile(host, replace_all ? text.split(old_string).join(new_string) : text.replace(old_string, () => new_string));
    return `Edited ${shown(ctx, host)}: ${replace_all ? count : 1} replacement(s)`;
  },
};

export const fileTools = [readTool, writeTool, editTool, globTool, grepTool];
