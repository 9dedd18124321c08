import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AgentsvcPlugin, Tool, ToolResult } from '../../src/features/plugin-host/api.js';
import { ToolError } from '../../src/features/plugin-host/api.js';
import { isStdio, type McpServers } from './config.js';
import { exposedName } from './names.js';
import { NpxShelf, npxPackage } from './npx.js';
import { PerUserServer } from './per-user.js';
import { McpServerConnection } from './server.js';

export { parseMcpServers, type McpServers } from './config.js';
export type { McpServerConnection } from './server.js';

/** The model reads text: MCP content blocks as text, binary parts described, not inlined. */
export function resultText(r: CallToolResult): string {
  const parts: string[] = [];
  for (const c of r.content ?? []) {
    if (c.type === 'text') parts.push(c.text);
    else if (c.type === 'image' || c.type === 'audio') parts.push(`[${c.type} ${c.mimeType}, ${Math.floor((c.data.length * 3) / 4)} bytes]`);
    else if (c.type === 'resource') parts.push('text' in c.resource ? `[resource ${c.resource.uri}]\n${c.resource.text}` : `[resource ${c.resource.uri}, binary]`);
    else if (c.type === 'resource_link') parts.push(`[resource link ${c.uri}${c.name ? ` (${c.name})` : ''}]`);
  }
  if (!parts.length && r.structuredContent) parts.push(JSON.stringify(r.structuredContent));
  return parts.join('\n') || '(no content)';
}

/** The server's input schema as the model and the validator get it: an object schema, without `$schema` (ajv knows draft-07 only). */
function schemaOf(s: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!s || typeof s !== 'object') return { type: 'object' };
  const { $schema: _drop, ...rest } = s;
  return { ...rest, type: 'object' };
}

export interface McpPluginOptions {
  servers: McpServers;
  timeoutMs: number;
  /** How long `up` waits for the servers' first start before going on without them (they keep starting). */
  startWaitMs?: number;
  /**
   * AGENTSVC_HOME: npx packages of servers in computers are fetched on the host into
   * `<home>/shared/npm` (the local runner shows `<home>/shared` in computers at /opt/agentsvc).
   */
  home?: string;
}

/**
 * MCP servers as a tool provider (provider `mcp`): each server's tools offered as
 * `mcp__<server>__<tool>` with the server's JSON Schema; one check per server in /api/env/check.
 * stdio servers run in each user's computer (per-user.ts) unless configured `run_in: host`; HTTP
 * servers and host stdio servers are one connection each, started with the service.
 */
export function createMcpPlugin(opts: McpPluginOptions): { plugin: AgentsvcPlugin; servers: () => McpServerConnection[] } {
  const conns: McpServerConnection[] = [];
  const perUser: PerUserServer[] = [];
  const plugin: AgentsvcPlugin = {
    name: 'mcp',
    description: 'Model Context Protocol servers (stdio and streamable HTTP) as tools mcp__<server>__<tool>',
    version: '1.0.0',
    async register(api) {
      const home = opts.home;
      const shelf = home ? new NpxShelf(join(home, 'shared'), join(home, 'cache', 'npm'), (m) => api.log(m)) : null;
      for (const [name, config] of Object.entries(opts.servers)) {
        if (config.disabled) continue;
        const connOpts = {
          timeoutMs: config.timeout_ms ?? opts.timeoutMs,
          startTimeoutMs: config.start_timeout_ms ?? Math.min(Math.max(config.timeout_ms ?? opts.timeoutMs, 10_000), 30_000),
          onToolsChanged: () => api.toolsChanged(),
          log: (m: string) => api.log(m),
        };
        if (isStdio(config) && config.run_in === 'computer') {
          // An npx launcher's package is fetched on the host now, so a first run rarely waits for it.
          const pkg = npxPackage(config.command, config.args);
          if (pkg && shelf) void shelf.prepare(pkg);
          perUser.push(new PerUserServer(name, config, api, connOpts, pkg && shelf ? { shelf, pkg } : undefined));
        }
        else conns.push(new McpServerConnection(name, config, connOpts));
      }
      api.onClose(async () => {
        await Promise.all([...conns.map((c) => c.stop()), ...perUser.map((p) => p.stop())]);
      });
      const hosted = conns.filter((c) => isStdio(c.config)).map((c) => c.name);
      if (hosted.length) api.log(`stdio MCP servers run on the service's host (run_in: host) as the service's own user, not inside users' computers: ${hosted.join(', ')}`);
      const first = Promise.all(
        conns.map(async (c) => {
          const error = (await c.start()) ? null : c.lastError;
          if (error) api.log(`MCP server ${c.name} did not start: ${error}`);
        }),
      );
      await Promise.race([first, new Promise((r) => setTimeout(r, opts.startWaitMs ?? 5000).unref())]);

      // Tool objects are made once per listing, so a tool's schema always matches the server's list.
      const toolsOf = (c: McpServerConnection, used?: () => void): Tool[] =>
        c.tools.map((t) => ({
          name: exposedName(c.name, t.name),
          displayName: `${c.name}: ${t.name}`,
          description: `${t.description} (MCP server ${c.name})`.slice(0, 4000),
          provider: 'mcp',
          parameters: schemaOf(t.inputSchema),
          async execute(args: Record<string, unknown>, ctx): Promise<ToolResult> {
            ctx.progress(`calling ${t.name} on MCP server ${c.name}`);
            used?.();
            let r: CallToolResult;
            try {
              r = await c.call(t.name, args, ctx.signal);
            } catch (e) {
              if (ctx.signal.aborted) throw e;
              const msg = (e as Error).message;
              throw new ToolError(/timed out|timeout/i.test(msg) ? `MCP server ${c.name} did not answer ${t.name} within ${c.config.timeout_ms ?? opts.timeoutMs} ms` : `MCP ${c.name}/${t.name} failed: ${msg}`);
            }
            return { output: resultText(r), status: r.isError ? 'error' : 'done' };
          },
        }));
      api.registerProvider({
        name: 'mcp',
        tools: async (scope) => {
          const own = await Promise.all(perUser.map(async (p) => ({ p, c: await p.connection(scope) })));
          await Promise.all([...conns, ...own.map((o) => o.c)].map((c) => c.settled()));
          return [
            ...conns.filter((c) => c.state === 'ready').flatMap((c) => toolsOf(c)),
            ...own.filter(({ c }) => c.state === 'ready').flatMap(({ p, c }) => toolsOf(c, () => p.touch(scope.userId))),
          ];
        },
      });

      // A user whose server cannot start in their computer is told so in their runs (their tools
      // are missing, and the model can say why), not only in /api/env/check.
      if (perUser.length)
        api.addPromptContributor({
          name: 'mcp',
          async contribute(ctx) {
            if (ctx.mode === 'planning') return null;
            const down: string[] = [];
            for (const p of perUser) {
              await p.connection(ctx);
              const why = p.trouble(ctx.userId);
              if (why) down.push(`- MCP server ${p.name} (tools mcp__${p.name}__*) did not start in this user's computer: ${why.slice(0, 1000)}`);
            }
            return down.length ? `Unavailable tool servers (tell the user if they ask for these tools):\n${down.join('\n')}` : null;
          },
        });

      for (const c of conns) {
        api.addHealthCheck({
          id: c.name,
          async run() {
            const where = isStdio(c.config) ? 'stdio, on the host' : `HTTP ${new URL(c.config.url).origin}`;
            // run_in: host is the operator's choice, but the server runs outside every sandbox as
            // the service's user: always a warning, so `doctor` keeps saying it.
            if (c.state === 'ready' && isStdio(c.config))
              return {
                status: 'warn',
                detail: `${c.tools.length} tools (${where}, as the service's user, outside any user's computer: run_in "host")${c.restarts ? `; restarted ${c.restarts} times` : ''}`,
                fix: `remove run_in: "host" from MCP server ${c.name} to run it in each user's computer`,
              };
            if (c.state === 'ready') return { status: 'ok', detail: `${c.tools.length} tools (${where})${c.restarts ? `; restarted ${c.restarts} times` : ''}` };
            if (c.state === 'starting') return { status: 'warn', detail: `starting (${where})${c.lastError ? `; last error: ${c.lastError}` : ''}`, fix: 'wait a moment and check again' };
            return {
              status: 'fail',
              detail: `${c.state}: ${c.lastError ?? 'unknown error'}; its tools are withdrawn (${where})`,
              fix: isStdio(c.config) ? `check the command of MCP server ${c.name} (AGENTSVC_MCP_SERVERS or config.json mcp); it is restarted with backoff` : `check that ${c.config.url} serves MCP (streamable HTTP)`,
            };
          },
        });
      }
      for (const p of perUser) api.addHealthCheck({ id: p.name, run: async (viewer) => p.health(viewer) });
    },
  };
  return { plugin, servers: () => [...conns, ...perUser.flatMap((p) => p.connections())] };
}
