import { Ajv, type ValidateFunction } from 'ajv';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { ProviderHealth, Tool, ToolProvider, ToolScope, ToolSpec } from './types.js';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Every tool the loop can offer: tools registered at start (the builtin provider) and the tools of
 * providers (skills, MCP, integrations), listed per session at run start. Arguments are validated
 * against the tool's JSON Schema before execute; the message is written for the model, so it can
 * fix its call.
 */
export class ToolRegistry {
  private tools = new Map<string, Tool>();
  private providers = new Map<string, ToolProvider>();
  private validators = new WeakMap<Tool, ValidateFunction>();
  /** Compiled schemas by their JSON text: providers that build a new tool object per listing compile once. */
  private compiled = new Map<string, { schema: object; validate: ValidateFunction }>();
  private filters: ((scope: ToolScope, tools: Tool[]) => Tool[] | Promise<Tool[]>)[] = [];
  private ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true }).addFormat('uri', (s: string) => {
    try {
      return !!new URL(s).protocol;
    } catch {
      return false;
    }
  });

  /** Tool `provider`s and tool provider names, ranked (src/modules.ts TOOL_ORDER): unnamed ones after, in the order they came. */
  private rank = new Map<string, number>();

  /** Rises whenever the set of offered tools may have changed (a provider added, an MCP list_changed). */
  generation = 0;
  /** Sessions whose providers saw sessionStart in this process (bounded; oldest forgotten first). */
  private started = new Set<string>();

  constructor(private readonly logger?: Logger) {}

  /** Runs in flight list their tools again before their next model call. */
  changed(): void {
    this.generation++;
  }

  register(tool: Tool): void {
    if (!TOOL_NAME.test(tool.name)) throw new Error(`invalid tool name ${tool.name}`);
    this.validators.set(tool, this.compile(tool.parameters));
    this.tools.set(tool.name, tool);
    this.sort();
  }

  /**
   * The order tools are offered in, whatever order their modules start in: registered tools by
   * their name or their `provider`, then tool providers by their name, each as ranked here.
   */
  order(names: readonly string[]): void {
    this.rank = new Map(names.map((n, i) => [n, i]));
    this.sort();
  }

  private sort() {
    const at = (n: string) => this.rank.get(n) ?? this.rank.size;
    // Stable sorts: one rank keeps the order of registration.
    const tool = (t: Tool) => Math.min(at(t.name), at(t.provider));
    this.tools = new Map([...this.tools].sort(([, a], [, b]) => tool(a) - tool(b)));
    this.providers = new Map([...this.providers].sort(([a], [b]) => at(a) - at(b)));
  }

  unregister(name: string): void {
    this.tools.delete(name);
  }

  /** Add a provider; its tools are listed per session. Returns the function that removes it. */
  addProvider(provider: ToolProvider): () => void {
    if (this.providers.has(provider.name)) throw new Error(`a tool provider named ${provider.name} already exists`);
    this.providers.set(provider.name, provider);
    this.sort();
    this.changed();
    return () => {
      if (this.providers.get(provider.name) === provider) this.providers.delete(provider.name);
      this.changed();
    };
  }

  /** Narrow what a session is offered and may run (a solution role's tool list, src/features/solutions). */
  addFilter(filter: (scope: ToolScope, tools: Tool[]) => Tool[] | Promise<Tool[]>): void {
    this.filters.push(filter);
  }

  providerList(): ToolProvider[] {
    return [...this.providers.values()];
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  all(): Tool[] {
    return [...this.tools.values()];
  }

  /** Registered tools a session may use: `disable_tools` removes tools by name or by provider. */
  allowed(disabled: string[] = []): Tool[] {
    const off = new Set(disabled);
    return this.all().filter((t) => !off.has(t.name) && !off.has(t.provider));
  }

  /**
   * Every tool offered in a session now: registered tools, then each provider's. A provider that
   * fails, or offers a malformed tool or a name already taken, is logged and left out.
   */
  async forSession(scope: ToolScope, disabled: string[] = []): Promise<Tool[]> {
    const off = new Set(disabled);
    const out = this.allowed(disabled);
    const names = new Set(this.tools.keys());
    await this.start(scope);
    for (const p of this.providers.values()) {
      let listed: Tool[];
      try {
        listed = await p.tools(scope);
      } catch (e) {
        this.logger?.error({ ...errField(e), provider: p.name, session_id: scope.sessionId }, 'a tool provider failed to list its tools; left out');
        continue;
      }
      for (const t of listed) {
        if (off.has(t.name) || off.has(t.provider) || off.has(p.name)) continue;
        if (!TOOL_NAME.test(t.name) || names.has(t.name) || (!t.schemaChecked && !this.validator(t))) {
          this.logger?.warn({ provider: p.name, tool: t.name }, 'a provider tool with a bad or duplicate name or schema was left out');
          continue;
        }
        names.add(t.name);
        out.push(t);
      }
    }
    let offered = out;
    for (const f of this.filters) offered = await f(scope, offered);
    return offered;
  }

  /** sessionStart of every provider, once per session and process; a failing hook is logged. */
  private async start(scope: ToolScope): Promise<void> {
    if (this.started.has(scope.sessionId)) return;
    this.started.add(scope.sessionId);
    if (this.started.size > 10_000) this.started.delete(this.started.values().next().value as string);
    for (const p of this.providers.values()) {
      await p.sessionStart?.(scope).catch((e) => this.logger?.error({ ...errField(e), provider: p.name, session_id: scope.sessionId }, 'a provider sessionStart failed'));
    }
  }

  /** The session was deleted: sessionEnd of every provider. Never throws. */
  async endSession(scope: ToolScope): Promise<void> {
    this.started.delete(scope.sessionId);
    for (const p of this.providers.values()) {
      await p.sessionEnd?.(scope).catch((e) => this.logger?.error({ ...errField(e), provider: p.name, session_id: scope.sessionId }, 'a provider sessionEnd failed'));
    }
  }

  private validator(tool: Tool): ValidateFunction | null {
    let v = this.validators.get(tool);
    if (!v) {
      try {
        v = this.compile(tool.parameters);
      } catch {
        return null;
      }
      this.validators.set(tool, v);
    }
    return v;
  }

  /** Compile a schema, or reuse the function compiled for the same JSON text (bounded; ajv forgets evicted ones). */
  private compile(schema: object): ValidateFunction {
    const key = JSON.stringify(schema);
    const hit = this.compiled.get(key);
    if (hit) return hit.validate;
    const validate = this.ajv.compile(schema);
    if (this.compiled.size >= 2000) {
      const [oldKey, old] = this.compiled.entries().next().value as [string, { schema: object }];
      this.compiled.delete(oldKey);
      this.ajv.removeSchema(old.schema);
    }
    this.compiled.set(key, { schema, validate });
    return validate;
  }

  /** null when valid, else a message for the model. */
  validate(tool: Tool | string, args: unknown): string | null {
    const t = typeof tool === 'string' ? this.tools.get(tool) : tool;
    const v = t && this.validator(t);
    if (!t || !v) return `unknown tool ${typeof tool === 'string' ? tool : tool.name}`;
    if (v(args)) return null;
    const problems = (v.errors ?? []).map((e) => {
      const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'arguments';
      const extra = e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : '';
      return `${where} ${e.message}${extra}`;
    });
    return `Invalid arguments for ${t.name}: ${problems.join('; ')}. Fix the call to match the tool's schema and try again.`;
  }

  /** Health of every provider that reports one (for /api/env/check). */
  async health(): Promise<{ provider: string; health: ProviderHealth }[]> {
    const out: { provider: string; health: ProviderHealth }[] = [];
    for (const p of this.providers.values()) {
      if (!p.health) continue;
      const health = await p.health().catch((e: Error) => ({ status: 'fail' as const, detail: e.message }));
      out.push({ provider: p.name, health });
    }
    return out;
  }

  async close() {
    for (const p of this.providers.values()) await p.close?.().catch((e) => this.logger?.error({ ...errField(e), provider: p.name }, 'closing a tool provider failed'));
  }

  /** What the model is told of these tools. */
  static specs(tools: Tool[]): ToolSpec[] {
    return tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  }
}
