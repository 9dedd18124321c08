import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from '../../platform/config/index.js';
import type { SystemPrompt } from '../../core/engine/system-prompt.js';
import type { SessionFolders } from '../../core/files/session-folder.js';
import type { ToolRegistry } from '../../core/tools/registry.js';
import type { Tool, ToolProvider } from '../../core/tools/types.js';
import type * as Api from './api.js';
import { sessionFiles } from './files.js';
import { safeFetch } from '../../core/tools/web/safe-fetch.js';

export type { AgentsvcPlugin, PluginApi, PluginConfig } from './api.js';

// The service's own types must fit the public ones: a plugin's tools and providers go straight
// into the registry, and the service's contexts go straight into a plugin's execute().
type Fits<A, B extends A> = B;
export type _ToolFits = Fits<Api.Tool, Tool>;
export type _ProviderFits = Fits<Api.ToolProvider, ToolProvider>;

const PLUGIN_NAME = /^[a-z0-9_-]{1,64}$/;

export function pluginConfig(c: Config): Api.PluginConfig {
  return Object.freeze({
    home: c.home,
    model: { default: c.model.default, models: [...c.model.models], contextWindow: c.model.contextWindow },
    runner: { kind: c.runner.kind, network: c.runner.network },
    web: { allowPrivate: c.web.allowPrivate },
    publicSharing: c.publicSharing,
    memoryEnabled: c.memoryEnabled,
  });
}

/** A check declared by a plugin, as /api/env/check runs it. */
export interface PluginCheck {
  id: string;
  run(viewer?: Api.CheckViewer): Promise<Api.CheckResult>;
}

export interface PluginHost {
  registry: ToolRegistry;
  prompt: SystemPrompt;
  /** Where plugin checks go (read by the diagnostics routes). */
  checks: PluginCheck[];
  /** Session folders (api.files). */
  workspaces: SessionFolders;
  /** Shutdown hooks, run by the service's close. */
  closers?: (() => Promise<unknown>)[];
}

/** One plugin to load: a module (npm name or path), or a first-party plugin object with its options. */
export type PluginEntry = string | { spec: string; plugin: Api.AgentsvcPlugin; options?: Record<string, unknown> };

export interface LoadedPlugin {
  name: string;
  spec: string;
  description?: string;
  version?: string;
  firstParty: boolean;
}

export interface PluginReport {
  loaded: LoadedPlugin[];
  failed: { spec: string; error: string }[];
}

function isPlugin(x: unknown): x is Api.AgentsvcPlugin {
  return !!x && typeof x === 'object' && typeof (x as Api.AgentsvcPlugin).name === 'string' && typeof (x as Api.AgentsvcPlugin).register === 'function';
}

function isTool(t: unknown): t is Tool {
  const x = t as Tool;
  return !!x && typeof x.name === 'string' && typeof x.description === 'string' && typeof x.provider === 'string' && typeof x.execute === 'function' && !!x.parameters && typeof x.parameters === 'object';
}

/**
 * The module file of a plugin folder, as a package's import would pick it: package.json
 * `exports` (the `.` entry, its `import` or `default` condition), else `main`, else index.mjs or
 * index.js. Node's import() of a folder path fails ("Directory import ... is not supported"),
 * and a folder is what the starter's readme says to list.
 */
function folderEntry(dir: string): string {
  const pkgFile = join(dir, 'package.json');
  if (existsSync(pkgFile)) {
    let pkg: { exports?: unknown; main?: unknown };
    try {
      pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
    } catch (e) {
      throw new Error(`${pkgFile} is not valid JSON: ${(e as Error).message}`);
    }
    const pick = (x: unknown): unknown => (x && typeof x === 'object' ? pick((x as Record<string, unknown>).import ?? (x as Record<string, unknown>).default) : x);
    const exp = pkg.exports && typeof pkg.exports === 'object' && '.' in pkg.exports ? (pkg.exports as Record<string, unknown>)['.'] : pkg.exports;
    const entry = pick(exp) ?? pkg.main;
    if (typeof entry === 'string') return join(dir, entry);
  }
  for (const name of ['index.mjs', 'index.js']) if (existsSync(join(dir, name))) return join(dir, name);
  throw new Error(`the folder ${dir} has no plugin module: give its package.json "exports" or "main", or add index.mjs`);
}

async function importPlugin(spec: string): Promise<unknown> {
  let target = spec;
  if (spec.startsWith('.') || isAbsolute(spec)) {
    const path = resolve(spec);
    target = pathToFileURL(existsSync(path) && statSync(path).isDirectory() ? folderEntry(path) : path).href;
  }
  const mod = (await import(target)) as { default?: unknown };
  return mod.default ?? mod;
}

/** Where plugin lines go: problems (`warn`) and what happened (`info`). */
export interface PluginLines {
  warn(message: string): void;
  info(message: string): void;
}

/**
 * Load plugins from an explicit list (npm package names or paths, and the first-party plugins the
 * service passes as objects). Each is shape-checked; a plugin that fails to import, has the wrong
 * shape or throws in register() is reported and skipped, and whatever it registered before failing
 * is removed. It never stops the service.
 */
export async function loadPlugins(
  entries: PluginEntry[],
  host: PluginHost,
  config: Config,
  log: PluginLines,
  pluginOptions: Record<string, Record<string, unknown>> = {},
): Promise<PluginReport> {
  const report: PluginReport = { loaded: [], failed: [] };
  const { registry } = host;
  const view = pluginConfig(config);
  const names = new Set<string>();
  for (const entry of entries) {
    const spec = typeof entry === 'string' ? entry : entry.spec;
    const undo: (() => void)[] = [];
    const closers: (() => void | Promise<void>)[] = [];
    try {
      const plugin = typeof entry === 'string' ? await importPlugin(entry) : entry.plugin;
      if (!isPlugin(plugin)) throw new Error('the default export must be {name: string, register(api)}');
      if (!PLUGIN_NAME.test(plugin.name)) throw new Error(`plugin name ${JSON.stringify(plugin.name)} must be 1-64 of [a-z0-9_-]`);
      if (names.has(plugin.name)) throw new Error(`a plugin named ${plugin.name} is already loaded`);
      const hooks: ToolProvider = { name: `${plugin.name}:hooks`, tools: () => [] };
      let hooked = false;
      const addHooks = () => {
        if (!hooked) undo.push(registry.addProvider(hooks));
        hooked = true;
      };
      const options = typeof entry === 'string' ? (pluginOptions[plugin.name] ?? {}) : (entry.options ?? {});
      const api: Api.PluginApi = {
        config: view,
        options: Object.freeze({ ...options }),
        log: (m) => log.warn(`plugin ${plugin.name}: ${m}`),
        info: (m) => log.info(`plugin ${plugin.name}: ${m}`),
        files: sessionFiles(host.workspaces),
        fetch: (url, o = {}) => safeFetch(url, { ...o, allowPrivate: config.web.allowPrivate, maxRedirects: 5 }),
        registerProvider(provider) {
          if (!provider || typeof provider.name !== 'string' || typeof provider.tools !== 'function') {
            throw new Error('registerProvider: not a provider (needs name and tools(scope))');
          }
          undo.push(registry.addProvider(provider as ToolProvider));
        },
        addPromptContributor(c) {
          if (!c || typeof c.name !== 'string' || typeof c.contribute !== 'function') throw new Error('addPromptContributor: needs name and contribute(ctx)');
          undo.push(host.prompt.add(c));
        },
        addHealthCheck(c) {
          if (!c || typeof c.id !== 'string' || typeof c.run !== 'function') throw new Error('addHealthCheck: needs id and run()');
          const check: PluginCheck = { id: `${plugin.name}:${c.id}`, run: (viewer) => c.run(viewer) };
          host.checks.push(check);
          undo.push(() => host.checks.splice(host.checks.indexOf(check), 1));
        },
        onSessionStart(fn) {
          const prev = hooks.sessionStart;
          hooks.sessionStart = async (s) => {
            await prev?.(s);
            await fn(s);
          };
          addHooks();
        },
        onSessionEnd(fn) {
          const prev = hooks.sessionEnd;
          hooks.sessionEnd = async (s) => {
            await prev?.(s);
            await fn(s);
          };
          addHooks();
        },
        onClose(fn) {
          closers.push(fn);
        },
        toolsChanged: () => registry.changed(),
        registerTool(tool) {
          if (!isTool(tool)) throw new Error(`registerTool: not a tool (needs name, description, provider, parameters, execute)`);
          if (registry.get(tool.name)) throw new Error(`registerTool: a tool named ${tool.name} already exists`);
          registry.register(tool);
          undo.push(() => registry.unregister(tool.name));
        },
      };
      await plugin.register(api);
      names.add(plugin.name);
      host.closers?.push(async () => {
        for (const c of closers) await c();
      });
      report.loaded.push({ name: plugin.name, spec, description: plugin.description, version: plugin.version, firstParty: typeof entry !== 'string' });
    } catch (e) {
      for (const u of undo.reverse()) u();
      for (const c of closers) await Promise.resolve(c()).catch(() => {});
      report.failed.push({ spec, error: (e as Error).message });
      log.warn(`plugin ${spec} skipped: ${(e as Error).message}`);
    }
  }
  return report;
}
