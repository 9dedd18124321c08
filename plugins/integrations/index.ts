import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { AgentsvcPlugin, PluginApi, Tool, ToolResult } from '../../src/features/plugin-host/api.js';
import { ToolError } from '../../src/features/plugin-host/api.js';
import type { Integrations, OpenApiIntegration } from './config.js';
import { buildRequest, integrationToolName, type Operation, parseOpenApi } from './openapi.js';

export { parseIntegrations, type Integrations } from './config.js';

const MAX_OUTPUT = 100_000;

interface Loaded {
  name: string;
  config: OpenApiIntegration;
  state: 'ready' | 'failed';
  error: string | null;
  tools: Tool[];
  base: string | null;
  /** Operations left out because their tool name was taken (a failing check says which). */
  collisions: string[];
}

/** The document: inline, a file (relative to AGENTSVC_HOME), or a URL fetched with the SSRF guard. */
async function loadSpec(api: PluginApi, spec: OpenApiIntegration['spec']): Promise<{ doc: string | Record<string, unknown>; from: string | null }> {
  if (typeof spec !== 'string') return { doc: spec, from: null };
  if (/^https?:\/\//.test(spec)) {
    const r = await api.fetch(spec, { headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' }, timeoutMs: 15_000 });
    if (r.status >= 400) throw new Error(`GET ${spec} answered ${r.status}`);
    return { doc: r.body.toString('utf8'), from: r.url };
  }
  const path = resolve(api.config.home, spec);
  return { doc: await readFile(path, 'utf8'), from: null };
}

function toolOf(api: PluginApi, l: Loaded, op: Operation): Tool {
  const auth = l.config.auth;
  return {
    name: integrationToolName(l.name, op.operationId),
    displayName: `${l.name}: ${op.operationId}`,
    description: `${op.description} [integration ${l.name}]`,
    provider: 'integration',
    parameters: op.schema,
    async execute(args: Record<string, unknown>, ctx): Promise<ToolResult> {
      if (!l.base) throw new ToolError(`integration ${l.name} has no base URL (set base_url in its configuration)`);
      const req = buildRequest(l.base, op, args);
      const url = new URL(req.url);
      if (auth) {
        const secret = ctx.env?.[auth.env];
        if (!secret) throw new ToolError(`integration ${l.name} needs ${auth.env}: ask the user to set it in the session's env or their default env bucket`);
        if (auth.type === 'bearer') req.headers.authorization = `Bearer ${secret}`;
        else if (auth.type === 'header') req.headers[auth.name.toLowerCase()] = secret;
        else url.searchParams.set(auth.name, secret);
      }
      let r: Awaited<ReturnType<PluginApi['fetch']>>;
      try {
        r = await api.fetch(url.href, { method: op.method, headers: req.headers, body: req.body, signal: ctx.signal, timeoutMs: l.config.timeout_ms ?? 30_000, maxBytes: MAX_OUTPUT });
      } catch (e) {
        if (ctx.signal.aborted) throw e;
        throw new ToolError(`${op.method} ${op.path} failed: ${(e as Error).message}`);
      }
      let text = r.body.toString('utf8');
      if (/json/.test(r.contentType)) {
        try {
          text = JSON.stringify(JSON.parse(text), null, 1);
        } catch {}
      }
      const output = `HTTP ${r.status}\n${text}${r.truncated ? '\n[truncated]' : ''}`;
      return { output, status: r.status >= 400 ? 'error' : 'done' };
    },
  };
}

/**
 * Integrations (provider `integration`): tools declared in config.json `integrations`. Each
 * OpenAPI document is read at start; one that cannot be read or parsed is reported at `up` and
 * by /api/env/check (`integrations:<name>`) and offers no tools; the others work.
 */
export function createIntegrationsPlugin(integrations: Integrations): AgentsvcPlugin {
  return {
    name: 'integrations',
    description: 'OpenAPI endpoints turned into tools (config.json integrations)',
    version: '1.0.0',
    async register(api) {
      const loaded: Loaded[] = [];
      for (const [name, config] of Object.entries(integrations)) {
        const l: Loaded = { name, config, state: 'failed', error: null, tools: [], base: null, collisions: [] };
        loaded.push(l);
        try {
          const { doc, from } = await loadSpec(api, config.spec);
          const parsed = parseOpenApi(doc, config.operations);
          const server = config.base_url ?? parsed.servers[0] ?? null;
          l.base = server && from ? new URL(server, from).href : server;
          if (l.base && !/^https?:\/\//.test(l.base)) throw new Error(`base URL ${l.base} is not absolute: set base_url`);
          // Operation ids that differ only in characters a tool name cannot hold, or past 64
          // characters, would give one name twice: the first keeps it, the others are reported.
          for (const op of parsed.operations) {
            const tool = toolOf(api, l, op);
            if (l.tools.some((x) => x.name === tool.name)) l.collisions.push(`${op.operationId} (${op.method} ${op.path}) as ${tool.name}`);
            else l.tools.push(tool);
          }
          l.state = 'ready';
        } catch (e) {
          l.error = (e as Error).message;
          api.log(`integration ${name} offers no tools: ${l.error}`);
        }
        api.addHealthCheck({
          id: name,
          run: async () =>
            l.state !== 'ready'
              ? { status: 'fail', detail: `offers no tools: ${l.error}`, fix: `fix integrations.${name} in config.json` }
              : l.collisions.length
                ? {
                    status: 'fail',
                    detail: `${l.tools.length} tools; ${l.collisions.length} operation(s) left out, their tool name taken: ${l.collisions.slice(0, 5).join('; ')}`,
                    fix: `list the operations to offer in integrations.${name}.operations, or give them distinct operationIds`,
                  }
                : { status: 'ok', detail: `${l.tools.length} tools (OpenAPI, ${l.base ?? 'no base URL'})` },
        });
      }
      api.registerProvider({ name: 'integrations', tools: () => loaded.flatMap((l) => l.tools) });
    },
  };
}
