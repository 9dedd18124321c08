import { defineModule } from '../../platform/lib/modules.js';
import { errField } from '../../platform/lib/logger.js';
import { type FirstParty, firstPartyPlugins } from './first-party.js';
import { loadPlugins, type PluginCheck, type PluginReport } from './loader.js';

export interface Plugins {
  /** Plugins loaded and skipped at start (first-party and from AGENTSVC_PLUGINS). */
  report: PluginReport;
  /** The first-party plugins' own objects (skills library, MCP connections). */
  firstParty: FirstParty;
  /** The checks plugins declared (the diagnostics module lists them with the tools' health). */
  checks: PluginCheck[];
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    plugins: Plugins;
  }
}

/** First-party plugins and those of AGENTSVC_PLUGINS, loaded through the plugin API (src/features/plugin-host/api.ts). */
export const pluginsModule = defineModule({
  name: 'plugins',
  needs: ['folders'],
  async start(ctx) {
    const { config, logger } = ctx;
    const host = { registry: ctx.tools, prompt: ctx.prompt, checks: [] as PluginCheck[], workspaces: ctx.get('folders'), closers: [] as (() => Promise<unknown>)[] };
    const close = async () => {
      for (const c of host.closers) await c().catch((e) => logger.error(errField(e), 'a plugin failed to close'));
    };
    const firstParty = firstPartyPlugins(config);
    // Plugin lines are `up` lines while starting (warnings, or notes), then lines of the service log.
    const pluginLog = {
      warn: (m: string) => (ctx.started() ? logger.warn({ source: 'plugin' }, m) : void ctx.warnings.push(m)),
      info: (m: string) => (ctx.started() ? logger.info({ source: 'plugin' }, m) : void ctx.notes.push(m)),
    };
    const report = await loadPlugins([...firstParty.entries, ...config.plugins], host, config, pluginLog, config.pluginOptions).catch(async (e) => {
      await ctx.tools.close();
      await close();
      throw e;
    });
    return {
      provides: { report, firstParty, checks: host.checks },
      close: [
        // The tool providers (MCP connections among them) close before the plugins' own closers.
        { phase: 'infrastructure', name: 'tools', close: () => ctx.tools.close() },
        { phase: 'infrastructure', name: 'plugins', close },
      ],
    };
  },
});
