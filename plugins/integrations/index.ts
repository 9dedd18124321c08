import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { AgentsvcPlugin, PluginApi, Tool, ToolResult } from '../../src/features/plugin-host/api.js';
import { ToolError } from '../../src/features/plugin-host/api.js';
import type { Integrations, OpenApiIntegration } from './config.js';
import { parseOffThread } from './load.js';
import { buildRequest, integrationToolNames, type Operation, operationSchema, type ParsedDocument } from './openapi.js';

export { parseIntegrations, type Integrations } from './config.js';

const MAX_OUTPUT = 100_000;

interface Loaded {
  name: string;
  config: OpenApiIntegration;
  state: 'loading' | 'ready' | 'failed';
  /** When loading began (for the check while it loads). */
  since: number;
  error: string | null;
  tools: Tool[];
  base: string | null;
  doc: ParsedDocument | null;
}

/** Converted schemas kept at once, across integrations: the tools offered lately (the rest are converted again when offered). */
const SCHEMA_CACHE = 256;

/** The document: inline, a file (relative to AGENTSVC_HOME), or a URL fetched with the SSRF guard. */
async function loadSpec(api: PluginApi, spec: OpenApiIntegration['spec'], signal: AbortSignal): Promise<{ doc: string | Record<string, unknown>; from: string | null }> {
  if (typeof spec !== 'string') return { doc: spec, from: null };
  if (/^https?:\/\//.test(spec)) {
    const r = await api.fetch(spec, { headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' }, timeoutMs: 15_000, signal });
    if (r.status >= 400) throw new Error(`GET ${spec} answered ${r.status}`);
    return { doc: r.body.toString('utf8'), from: r.url };
  }
  const path = resolve(api.config.home, spec);
  return { doc: await readFile(path, 'utf8'), from: null };
}

function toolOf(api: PluginApi, l: Loaded, op: Operation, name: string, schemaOf: (op: Operation) => Record<string, unknown>): Tool {
  const auth = l.config.auth;
  return {
    name,
    displayName: `${l.name}: ${op.operationId}`,
    description: `${op.description} [integration ${l.name}]`,
    provider: 'integration',
    // Converted when offered or called, not when listed: a large document's tools cost their
    // names and descriptions until a run offers them (tool search).
    get parameters() {
      return schemaOf(op);
    },
    schemaChecked: true,
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
        r = await api.fetch(url.href, {
          method: op.method,
          headers: req.headers,
          body: req.body,
          signal: ctx.signal,
          timeoutMs: l.config.timeout_ms ?? 30_000,
          maxBytes: MAX_OUTPUT,
        });
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

/** What an integration's check says: `warn` while any operation is left out, each named with its reason. */
function check(l: Loaded): { status: 'ok' | 'warn' | 'fail'; detail: string; fix?: string } {
  const doc = l.doc;
  if (l.state === 'loading')
    return {
      status: 'warn',
      detail: `loading: reading and validating its document (${Math.round((Date.now() - l.since) / 1000)} s so far); its tools are offered once it has loaded`,
      fix: 'wait a moment and check again',
    };
  if (l.state !== 'ready' || !doc) return { status: 'fail', detail: `offers no tools: ${l.error}`, fix: `fix integrations.${l.name} in config.json` };
  const filtered = doc.filtered ? `, ${doc.filtered} left aside by its operations/tags filters` : '';
  const head = `${l.tools.length} of ${doc.total} operations as tools (OpenAPI ${doc.version}, ${l.base ?? 'no base URL'})${filtered}`;
  if (!doc.leftOut.length) return { status: 'ok', detail: head };
  return {
    status: 'warn',
    detail: `${head}; ${doc.leftOut.length} operation(s) left out: ${doc.leftOut.map((o) => `${o.operationId} (${o.method} ${o.path}): ${o.reason}`).join('; ')}`,
    fix: `these operations cannot be called as the document describes them; leave them aside with integrations.${l.name}.operations or .tags to silence this`,
  };
}

/** Loads one integration's document and makes its tools; a failure is the integration's state, never thrown. */
async function load(api: PluginApi, l: Loaded, taken: Set<string>, schemas: Map<Operation, Record<string, unknown>>, signal: AbortSignal): Promise<void> {
  const { name, config } = l;
  try {
    const { doc, from } = await loadSpec(api, config.spec, signal);
    const parsed = await parseOffThread(doc, { operations: config.operations, tags: config.tags }, signal);
    const v31 = parsed.version.startsWith('3.1');
    const schemaOf = (op: Operation) => {
      let s = schemas.get(op);
      if (s) schemas.delete(op);
      else s = operationSchema(op, v31);
      schemas.set(op, s);
      if (schemas.size > SCHEMA_CACHE) schemas.delete(schemas.keys().next().value as Operation);
      return s;
    };
    const server = config.base_url ?? parsed.servers[0] ?? null;
    const base = server && from ? new URL(server, from).href : server;
    if (base && !/^https?:\/\//.test(base)) throw new Error(`base URL ${base} is not absolute: set base_url`);
    const names = integrationToolNames(name, parsed.operations, taken);
    const tools = parsed.operations.map((op, i) => {
      taken.add(names[i]);
      return toolOf(api, l, op, names[i], schemaOf);
    });
    // All at once: a listing never sees half an integration.
    Object.assign(l, { base, doc: parsed, tools, state: 'ready' });
  } catch (e) {
    l.state = 'failed';
    l.error = (e as Error).message;
    if (!signal.aborted) api.log(`integration ${name} offers no tools: ${l.error}`);
  }
}

/** The prompt section of a run that starts while integrations load: their tools are missing, and the model can say why. */
function loadingNote(loaded: Loaded[]): string | null {
  const loading = loaded.filter((l) => l.state === 'loading');
  if (!loading.length) return null;
  const lines = loading.map((l) => `- integration ${l.name} (tools api__${l.name}__*): still loading its API description`);
  return `Tools not offered yet (tell the user if they ask for these; they become callable during this run once loaded):\n${lines.join('\n')}`;
}

/**
 * Integrations (provider `integration`): tools declared in config.json `integrations`. Each
 * OpenAPI document is read in the background after start, one at a time, in a worker thread: the
 * service listens at once. Until an integration has loaded its check says `loading` and runs go
 * without its tools (their system prompt says so); once loaded, runs in flight get them from their
 * next model call. A document that cannot be read or is not a valid OpenAPI 3.0/3.1 document is
 * reported in the log and by /api/env/check (`integrations:<name>`) and offers no tools; the others
 * work. docs/integrations.md has the rules.
 */
export function createIntegrationsPlugin(integrations: Integrations): AgentsvcPlugin & { loaded: () => Promise<void> } {
  let done: Promise<void> = Promise.resolve();
  return {
    name: 'integrations',
    description: 'OpenAPI endpoints turned into tools (config.json integrations)',
    version: '1.0.0',
    /** Settles when every integration has loaded or failed (the bench; tests wait on the check). */
    loaded: () => done,
    register(api) {
      // Names are unique across integrations too: two never offer one name (loaded in order, so stable).
      const taken = new Set<string>();
      const schemas = new Map<Operation, Record<string, unknown>>();
      const loaded: Loaded[] = Object.entries(integrations).map(([name, config]) => ({
        name,
        config,
        state: 'loading',
        since: Date.now(),
        error: null,
        tools: [],
        base: null,
        doc: null,
      }));
      for (const l of loaded) api.addHealthCheck({ id: l.name, run: async () => check(l) });
      api.registerProvider({ name: 'integrations', tools: () => loaded.flatMap((l) => l.tools) });
      if (loaded.length) api.addPromptContributor({ name: 'integrations', contribute: (ctx) => (ctx.mode === 'planning' ? null : loadingNote(loaded)) });
      const stop = new AbortController();
      api.onClose(() => stop.abort());
      // One at a time: a large document takes a core and hundreds of MB for seconds.
      done = (async () => {
        for (const l of loaded) {
          if (stop.signal.aborted) {
            Object.assign(l, { state: 'failed', error: 'the service stopped before it loaded' });
            continue;
          }
          await load(api, l, taken, schemas, stop.signal);
          if (l.tools.length) api.toolsChanged();
        }
      })();
    },
  };
}
