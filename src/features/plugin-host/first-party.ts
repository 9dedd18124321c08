import type { Config } from '../../platform/config/index.js';
import { createSkillsPlugin } from '../../../plugins/skills/index.js';
import type { SkillLibrary } from '../../../plugins/skills/library.js';
import { createMcpPlugin } from '../../../plugins/mcp/index.js';
import { createIntegrationsPlugin } from '../../../plugins/integrations/index.js';
import type { McpServerConnection } from '../../../plugins/mcp/server.js';
import type { PluginEntry } from './loader.js';

export interface FirstParty {
  entries: PluginEntry[];
  /** The skills plugin's library, for the skills REST endpoints (after loading). */
  skills: () => SkillLibrary;
  /** The MCP servers' connections (state, tools), for the registry and tests. */
  mcp: () => McpServerConnection[];
}

/**
 * The first-party plugins under plugins/, loaded through the same loader and API as outside
 * plugins, each given its own settings as `api.options`.
 */
export function firstPartyPlugins(config: Config): FirstParty {
  const skills = createSkillsPlugin({ promptTokens: config.skills.promptTokens });
  const mcp = createMcpPlugin({ servers: config.mcp.servers, timeoutMs: config.mcp.timeoutMs });
  return {
    entries: [
      { spec: 'plugins/skills', plugin: skills.plugin },
      { spec: 'plugins/mcp', plugin: mcp.plugin },
      { spec: 'plugins/integrations', plugin: createIntegrationsPlugin(config.integrations) },
    ],
    skills: skills.library,
    mcp: mcp.servers,
  };
}
