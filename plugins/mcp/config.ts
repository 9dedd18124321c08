import { z } from 'zod';

/**
 * AGENTSVC_MCP_SERVERS / config.json `mcp` (docs/plugins.md): a JSON object of servers by name,
 * `{command, args?, env?, cwd?}` for stdio or `{url, headers?}` for streamable HTTP. Checked
 * when the config is read, so a malformed value stops `up` with the setting named.
 */

export const SERVER_NAME = /^[a-z0-9_-]{1,32}$/;

const common = {
  /** Per call, default AGENTSVC_MCP_TIMEOUT_MS. */
  timeout_ms: z.number().int().min(100).max(3_600_000).optional(),
  /** For connecting and the first tools/list; default the call timeout, at least 10 s, at most 30 s. */
  start_timeout_ms: z.number().int().min(100).max(300_000).optional(),
  disabled: z.boolean().optional(),
};
const Stdio = z
  .object({
    command: z.string().min(1, 'command must not be empty'),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    /**
     * `computer` (default): one process per user inside that user's computer, started at their first
     * run and stopped when idle; when it cannot start there, that user's runs go without its tools
     * (never the host). `host`: one process on the service's host, only when the operator says so
     * (`up` and `doctor` warn).
     */
    run_in: z.enum(['computer', 'host']).default('computer'),
    ...common,
  })
  .strict();
const Http = z
  .object({
    url: z.string().refine((u) => {
      try {
        return ['http:', 'https:'].includes(new URL(u).protocol);
      } catch {
        return false;
      }
    }, 'url must be an http or https URL'),
    headers: z.record(z.string(), z.string()).default({}),
    ...common,
  })
  .strict();

export type StdioServer = z.output<typeof Stdio>;
export type HttpServer = z.output<typeof Http>;
export type McpServerConfig = StdioServer | HttpServer;
export type McpServers = Record<string, McpServerConfig>;

export const isStdio = (s: McpServerConfig): s is StdioServer => 'command' in s;

/** Parse a value from the environment (JSON text) or config.json (an object); throws a one-line message. */
export function parseMcpServers(value: unknown): McpServers {
  let v = value;
  if (v === undefined || v === null || v === '') return {};
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      throw new Error(`not valid JSON (${(e as Error).message})`);
    }
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('must be a JSON object of servers by name');
  const out: McpServers = {};
  for (const [name, entry] of Object.entries(v)) {
    if (!SERVER_NAME.test(name)) throw new Error(`server name ${JSON.stringify(name)} must be 1-32 of [a-z0-9_-]`);
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) throw new Error(`server ${name}: must be an object with command (stdio) or url (HTTP)`);
    const schema = 'command' in entry ? Stdio : 'url' in entry ? Http : null;
    if (!schema) throw new Error(`server ${name}: needs command (stdio) or url (streamable HTTP)`);
    const r = schema.safeParse(entry);
    if (!r.success) throw new Error(`server ${name}: ${r.error.issues.map((i) => `${i.path.join('.') || 'entry'}: ${i.message}`).join('; ')}`);
    out[name] = r.data;
  }
  return out;
}
