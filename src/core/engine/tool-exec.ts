import type { ToolRegistry } from '../tools/registry.js';
import type { Tool, ToolContext } from '../tools/types.js';
import { PathEscapeError } from '../files/session-folder.js';

/** Keep the head and tail of long output, with a note the model can act on. */
export function truncateOutput(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const head = Math.floor(limit * 0.7);
  const tail = limit - head;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n\n[... ${omitted} characters omitted: the output was longer than ${limit} characters. Narrow the request (offset/limit, a filter such as grep/head/tail, or a more specific pattern) to see the omitted part ...]\n\n${text.slice(-tail)}`;
}

/**
 * Run one tool call. Never throws for tool problems: unknown tools, schema violations, ToolErrors
 * and crashes all become an `error` result the model sees and can correct. Aborts propagate.
 */
export async function executeTool(
  registry: ToolRegistry,
  offered: Tool[],
  name: string,
  args: unknown,
  ctx: ToolContext,
  outputLimit: number,
): Promise<{ output: string; status: 'done' | 'error' } | 'paused'> {
  const tool = offered.find((t) => t.name === name);
  if (!tool) {
    return { output: `Unknown or unavailable tool "${name}". Available tools: ${offered.map((t) => t.name).join(', ') || 'none'}.`, status: 'error' };
  }
  const invalid = registry.validate(tool, args);
  if (invalid) return { output: invalid, status: 'error' };
  try {
    const r = await tool.execute(args, ctx);
    const out = typeof r === 'string' ? { output: r, status: 'done' as const } : { output: r.output, status: r.status ?? ('done' as const) };
    return { output: truncateOutput(out.output, outputLimit), status: out.status };
  } catch (e) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
    const err = e as Error & { isToolError?: boolean; isPause?: boolean; code?: string };
    if (err.isPause) return 'paused';
    // No sandbox to run in is not something the model can fix: the run fails with a clear error.
    if (err.code === 'RUNNER_UNAVAILABLE') throw err;
    if (err.isToolError || err instanceof PathEscapeError) return { output: truncateOutput(`Error: ${err.message}`, outputLimit), status: 'error' };
    return { output: `Error: ${name} failed: ${err.message}`, status: 'error' };
  }
}
