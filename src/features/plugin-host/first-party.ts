import { type Config, ConfigError } from '../../platform/config/index.js';
import { createSkillsPlugin, type SkillLibrary } from '../../../plugins/skills/index.js';
import { createMcpPlugin, type McpServers, parseMcpServers } from '../../../plugins/mcp/index.js';
import { createIntegrationsPlugin, type Integrations, parseIntegrations } from '../../../plugins/integrations/index.js';
import type { McpServerConnection } from '../../../plugins/mcp/index.js';
import type { PluginEntry } from './loader.js';

export interface FirstParty {
  entries: PluginEntry[];
  /** The skills plugin's library, for the skills REST endpoints (after loading). */
  skills: () => SkillLibrary;
  /** The MCP servers' connections (state, tools), for the registry and tests. */
  mcp: () => McpServerConnection[];
}

/** The first-party plugins' own settings, each parsed by its plugin. */
export interface FirstPartySettings {
  mcp: McpServers;
  integrations: Integrations;
}

const parsed = new WeakMap<Config, FirstPartySettings>();

/**
 * The first-party plugins' sections of the config, parsed by the plugins (the config keeps them as
 * given: it knows no plugin). Once per config; a bad section is a ConfigError naming the setting.
 */
export function firstPartySettings(config: Config): FirstPartySettings {
  const known = parsed.get(config);
  if (known) return known;
  const section = <T>(setting: string, parse: (v: unknown) => T, value: unknown): T => {
    try {
      return parse(value);
    } catch (e) {
      throw new ConfigError(setting, (e as Error).message);
    }
  };
  const settings = {
    mcp: section('AGENTSVC_MCP_SERVERS', parseMcpServers, config.mcp.servers),
    integrations: section('AGENTSVC_INTEGRATIONS', parseIntegrations, config.integrations),
  };
  parsed.set(config, settings);
  return settings;
}

/**
 * The first-party plugins under plugins/, loaded through the same loader and API as outside
 * plugins, each given its own settings as `api.options`.
 */
export function firstPartyPlugins(config: Config): FirstParty {
  const skills = createSkillsPlugin({ promptTokens: config.skills.promptTokens });
  const settings = firstPartySettings(config);
  const mcp = createMcpPlugin({ servers: settings.mcp, timeoutMs: config.mcp.timeoutMs, home: config.home });
  return {
    entries: [
      { spec: 'plugins/skills', plugin: skills.plugin },
      { spec: 'plugins/mcp', plugin: mcp.plugin },
      { spec: 'plugins/integrations', plugin: createIntegrationsPlugin(settings.integrations) },
    ],
    skills: skills.library,
    mcp: mcp.servers,
  };
}
