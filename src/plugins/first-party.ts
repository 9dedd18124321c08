import type { Config } from '../config/index.js';
import { createSkillsPlugin } from '../../plugins/skills/index.js';
import type { SkillLibrary } from '../../plugins/skills/library.js';
import type { PluginEntry } from './loader.js';

export interface FirstParty {
  entries: PluginEntry[];
  /** The skills plugin's library, for the skills REST endpoints (after loading). */
  skills: () => SkillLibrary;
}

/**
 * The first-party plugins under plugins/, loaded through the same loader and API as outside
 * plugins, each given its own settings as `api.options`.
 */
export function firstPartyPlugins(config: Config): FirstParty {
  const skills = createSkillsPlugin({ promptTokens: config.skills.promptTokens });
  return {
    entries: [{ spec: 'plugins/skills', plugin: skills.plugin }],
    skills: skills.library,
  };
}
