import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from '../config/index.js';
import type { PromptContributor, SystemPrompt } from '../chat/system-prompt.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { Tool, ToolProvider } from '../tools/types.js';

/**
 * What a plugin may read of the configuration: no secrets (model key, database and Redis URLs,
 * search key). A plugin that needs its own secret reads it from its own setting.
 */
export interface PluginConfig {
  home: string;
  model: { default: string; models: string[]; contextWindow: number };
  runner: { kind: 'local' | 'docker'; network: boolean };
  web: { allowPrivate: boolean };
  publicSharing: boolean;
  memoryEnabled: boolean;
}

export function pluginConfig(c: Config): PluginConfig {
  return Object.freeze({
    home: c.home,
    model: { default: c.model.default, models: [...c.model.models], contextWindow: c.model.contextWindow },
    runner: { kind: c.runner.kind, network: c.runner.network },
    web: { allowPrivate: c.web.allowPrivate },
    publicSharing: c.publicSharing,
    memoryEnabled: c.memoryEnabled,
  });
}

/** What a plugin gets: the same registration paths first-party tool providers use. */
export interface PluginApi {
  /** A fixed tool, offered in every session. */
  registerTool(tool: Tool): void;
  /** A provider whose tools are listed per session and may change while the service runs. */
  registerProvider(provider: ToolProvider): void;
  /** A section of every run's system prompt. */
  addPromptContributor(contributor: PromptContributor): void;
  config: Readonly<PluginConfig>;
  log(message: string): void;
}

export interface PluginHost {
  registry: ToolRegistry;
  prompt: SystemPrompt;
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
export async function loadPlugins(specs: string[], host: PluginHost, config: Config, log: (m: string) => void): Promise<PluginReport> {
  const report: PluginReport = { loaded: [], failed: [] };
  const { registry } = host;
  const view = pluginConfig(config);
  for (const spec of specs) {
    const added: string[] = [];
    const undo: (() => void)[] = [];
    try {
      const target = spec.startsWith('.') || isAbsolute(spec) ? pathToFileURL(resolve(spec)).href : spec;
      const mod = (await import(target)) as { default?: unknown };
      const plugin = mod.default ?? mod;
      if (!isPlugin(plugin)) throw new Error('the default export must be {name: string, register(api)}');
      await plugin.register({
        config: view,
        log: (m) => log(`plugin ${plugin.name}: ${m}`),
        registerProvider(provider) {
          if (!provider || typeof provider.name !== 'string' || typeof provider.tools !== 'function') {
            throw new Error('registerProvider: not a provider (needs name and tools(scope))');
          }
          undo.push(registry.addProvider(provider));
        },
        addPromptContributor(c) {
          if (!c || typeof c.name !== 'string' || typeof c.contribute !== 'function') throw new Error('addPromptContributor: needs name and contribute(ctx)');
          undo.push(host.prompt.add(c));
        },
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
      for (const u of undo) u();
      report.failed.push({ spec, error: (e as Error).message });
      log(`plugin ${spec} skipped: ${(e as Error).message}`);
    }
  }
  return report;
}
