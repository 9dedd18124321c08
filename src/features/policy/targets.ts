import type { SessionSandbox } from '../../core/files/session-folder.js';
import type { CallFacts } from './rules.js';
import type { ShellParser } from './shell.js';

/**
 * What a call's rule patterns are matched on (docs/policy.md): the simple commands of a Bash line,
 * the workspace-relative path a file tool would touch, the host a WebFetch reaches, the JSON text
 * of any other tool's arguments.
 */

/** File tools and the argument that names their path. */
const PATH_TOOLS: Record<string, string> = { Read: 'file_path', Write: 'file_path', Edit: 'file_path', Glob: 'path', Grep: 'path' };

/** Targets a tool's patterns use: does the call need the (file system) work of finding them? */
export function targetKind(tool: string): CallFacts['kind'] {
  return tool in PATH_TOOLS ? 'path' : 'text';
}

/**
 * The facts of one call. `withPatterns` false: no rule with a pattern names this tool, so the
 * targets are not worked out (no parse, no file system). Synchronous: a few system calls at most
 * (a path's lstat per folder), each cheaper than a round trip through the thread pool.
 */
export function callFacts(shell: ShellParser, tool: { name: string; provider: string }, args: Record<string, unknown>, workspace: SessionSandbox | null, withPatterns: boolean): CallFacts {
  const facts: CallFacts = { tool: tool.name, provider: tool.provider, targets: [], kind: targetKind(tool.name), write: tool.name === 'Write' || tool.name === 'Edit' };
  if (!withPatterns) return facts;
  if (tool.name === 'Bash') facts.targets = shell.commands(typeof args.command === 'string' ? args.command : '');
  else if (tool.name in PATH_TOOLS) facts.targets = paths(tool.name, args, workspace);
  else if (tool.name === 'WebFetch') facts.targets = host(args.url);
  else facts.targets = [JSON.stringify(args)];
  return facts;
}

/** The host of a URL, lower case, without the port; null when it is no URL (every pattern matches). */
export function host(url: unknown): string[] | null {
  if (typeof url !== 'string') return null;
  try {
    const h = new URL(url.trim()).hostname.toLowerCase();
    return h ? [h.replace(/^\[|\]$/g, '').replace(/\.$/, '')] : null;
  } catch {
    return null;
  }
}

function paths(tool: string, args: Record<string, unknown>, ws: SessionSandbox | null): string[] | null {
  const given = args[PATH_TOOLS[tool]];
  const path = typeof given === 'string' && given !== '' ? given : '.';
  const main = confinedPath(ws, path);
  if (main === null) return null;
  // Glob's pattern names the files it lists: `secrets/*` from the root reaches into secrets/.
  if (tool === 'Glob' && typeof args.pattern === 'string') return [main, main ? `${main}/${args.pattern}` : args.pattern];
  return [main];
}

/**
 * The canonical workspace-relative path, resolved as the confined file layer resolves it for the
 * file tools: `./a/../secrets/x` is `secrets/x`, and a link to `secrets/` is read as `secrets/`.
 * A path that does not exist yet is resolved up to its deepest existing folder. Null when it
 * leaves the workspace (the tool refuses it; every pattern matches it meanwhile). Answered by
 * SessionFolder.resolveNow: synchronous, one lstat per folder, no descriptor held.
 */
export function confinedPath(ws: SessionSandbox | null, path: string): string | null {
  return ws ? ws.folder.resolveNow(path) : null;
}

/**
 * confinedPath by the confined walk itself (a descriptor per folder, each link resolved on the
 * way, every step a round trip through the thread pool): the reference resolveNow is tested
 * against, and the benchmark's baseline.
 */
export async function walkedPath(ws: SessionSandbox, path: string): Promise<string | null> {
  try {
    return await ws.folder.with(async (s) => {
      const parts = s.components(path);
      for (let k = parts.length; k >= 0; k--) {
        try {
          const entry = await s.walk(parts.slice(0, k).join('/'), { follow: true });
          await entry.close();
          return [entry.rel, ...parts.slice(k)].filter(Boolean).join('/');
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
        }
      }
      return parts.join('/');
    });
  } catch {
    return null;
  }
}
