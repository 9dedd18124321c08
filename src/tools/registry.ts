import { Ajv, type ValidateFunction } from 'ajv';
import type { Tool, ToolSpec } from './types.js';

/**
 * Every tool the loop can offer. Arguments are validated against the tool's JSON Schema before
 * execute; the message is written for the model, so it can fix its call.
 */
export class ToolRegistry {
  private tools = new Map<string, { tool: Tool; validate: ValidateFunction }>();
  private ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true }).addFormat('uri', (s: string) => {
    try {
      return !!new URL(s).protocol;
    } catch {
      return false;
    }
  });

  register(tool: Tool): void {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) throw new Error(`invalid tool name ${tool.name}`);
    this.tools.set(tool.name, { tool, validate: this.ajv.compile(tool.parameters) });
  }

  unregister(name: string): void {
    this.tools.delete(name);
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name)?.tool;
  }

  all(): Tool[] {
    return [...this.tools.values()].map((t) => t.tool);
  }

  /** Tools a session may use: `disable_tools` removes tools by name or by provider. */
  allowed(disabled: string[] = []): Tool[] {
    const off = new Set(disabled);
    return this.all().filter((t) => !off.has(t.name) && !off.has(t.provider));
  }

  /** null when valid, else a message for the model. */
  validate(name: string, args: unknown): string | null {
    const entry = this.tools.get(name);
    if (!entry) return `unknown tool ${name}`;
    if (entry.validate(args)) return null;
    const problems = (entry.validate.errors ?? []).map((e) => {
      const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'arguments';
      const extra = e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : '';
      return `${where} ${e.message}${extra}`;
    });
    return `Invalid arguments for ${name}: ${problems.join('; ')}. Fix the call to match the tool's schema and try again.`;
  }

  /** What the model is told of these tools. */
  static specs(tools: Tool[]): ToolSpec[] {
    return tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  }
}
