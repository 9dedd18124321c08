import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from '../config/index.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { Tool } from '../tools/types.js';

/** What a plugin gets: the same registration path first-party tool providers use. */
export interface PluginApi {
  registerTool(tool: Tool): void;
  config: Readonly<Config>;
  log(message: string): void;
}

/** A plugin module's default export. */
export interface AgentsvcPlugin {
  name: string;
  register(api: PluginApi): void | Promise<void>;
}

export interface PluginReport {
  loaded: string[];
  failed: { spec: string; error: string }[];
}

function isPlugin(x: unknown): x is AgentsvcPlugin {
  return !!x && typeof x === 'object' && typeof (x as AgentsvcPlugin).name === 'string' && typeof (x as AgentsvcPlugin).register === 'function';
}

function isTool(t: unknown): t is Tool {
  const x = t as Tool;
  return !!x && typeof x.name === 'string' && typeof x.description === 'string' && typeof x.provider === 'string' && typeof x.execute === 'function' && !!x.parameters && typeof x.parameters === 'object';
}

/**
 * Load plugins from an explicit list (npm package names or paths). Each is shape-checked; a
 * plugin that fails to import, has the wrong shape or throws in register() is reported and
 * skipped, and the tools it registered before failing are removed. It never stops the service.
 */
export async function loadPlugins(specs: string[], registry: ToolRegistry, config: Config, log: (m: string) => void): Promise<PluginReport> {
  const report: PluginReport = { loaded: [], failed: [] };
  for (const spec of specs) {
    const added: string[] = [];
    try {
      const target = spec.startsWith('.') || isAbsolute(spec) ? pathToFileURL(resolve(spec)).href : spec;
      const mod = (await import(target)) as { default?: unknown };
      const plugin = mod.default ?? mod;
      if (!isPlugin(plugin)) throw new Error('the default export must be {name: string, register(api)}');
      await plugin.register({
        config,
        log: (m) => log(`plugin ${plugin.name}: ${m}`),
        registerTool(tool) {
          if (!isTool(tool)) throw new Error(`registerTool: not a tool (needs name, description, provider, parameters, execute)`);
          if (registry.get(tool.name)) throw new Error(`registerTool: a tool named ${tool.name} already exists`);
          registry.register(tool);
          added.push(tool.name);
        },
      });
      report.loaded.push(plugin.name);
    } catch (e) {
      for (const name of added) registry.unregister(name);
      report.failed.push({ spec, error: (e as Error).message });
      log(`plugin ${spec} skipped: ${(e as Error).message}`);
    }
  }
  return report;
}
