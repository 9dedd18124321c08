import { createHash } from 'node:crypto';

const MAX = 64;

/**
 * The name the model sees for an MCP tool: `mcp__<server>__<tool>`, characters outside
 * [A-Za-z0-9_-] replaced by `_`; over 64 characters it is cut and ends with a short hash of the
 * original name, so two long names never collide. The caller keeps the map back to the tool.
 */
export function exposedName(server: string, tool: string): string {
  const full = `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (full.length <= MAX && full === `mcp__${server}__${tool}`) return full;
  const hash = createHash('sha256').update(`${server}\0${tool}`).digest('hex').slice(0, 8);
  if (full.length <= MAX) return `${full.slice(0, MAX - 9)}_${hash}`.slice(0, MAX);
  return `${full.slice(0, MAX - 9)}_${hash}`;
}
