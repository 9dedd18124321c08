import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentsvcPlugin, PluginApi, SessionScope, Tool } from '../../src/features/plugin-host/api.js';
import { ToolError } from '../../src/features/plugin-host/api.js';
import { SKILL_NAME } from './format.js';
import { type LoadedSkill, SkillLibrary } from './library.js';

export { SkillLibrary, type LoadedSkill } from './library.js';
export { uploadSkill, UploadError } from './upload.js';
export { parseSkill, SkillFormatError } from './format.js';

/** The shipped skills, beside this plugin's sources (plugins/skills/shipped, also from dist/). */
export function shippedDir(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  return join(here.replace(/\/dist\/plugins\/skills\/?$/, '/plugins/skills'), 'shipped');
}

/** A rough token count (4 characters a token): the budget is a bound, not a bill. */
export const tokens = (s: string) => Math.ceil(s.length / 4);

const HEAD =
  '## Skills\n' +
  'Skills are folders of instructions and scripts for particular tasks. When a task matches a skill below, ' +
  'call the Skill tool with its name before doing the task: it returns the instructions and where the skill\'s files are, ' +
  'and you run its scripts with Bash from the session folder.';

/**
 * Progressive disclosure: names and descriptions only, within `budget` tokens. Descriptions are
 * shortened first; skills that still do not fit are named without description, then counted.
 */
export function skillsPrompt(skills: LoadedSkill[], budget: number): string | null {
  if (!skills.length || budget <= 0) return null;
  let used = tokens(HEAD);
  const lines: string[] = [];
  const rest: string[] = [];
  for (const s of skills) {
    const line = `- ${s.name}: ${s.description.length > 300 ? `${s.description.slice(0, 297)}...` : s.description}`;
    if (!rest.length && used + tokens(line) + 1 <= budget) {
      lines.push(line);
      used += tokens(line) + 1;
    } else rest.push(s.name);
  }
  let tail = '';
  if (rest.length) {
    const names: string[] = [];
    for (const n of rest) {
      if (used + tokens(`${names.join(', ')}, ${n}`) + 20 > budget) break;
      names.push(n);
    }
    const more = rest.length - names.length;
    tail = `\nAlso available (call Skill to read them): ${names.join(', ')}${more ? `${names.length ? ' and ' : ''}${more} more` : ''}.`;
  }
  return `${HEAD}\n${lines.join('\n')}${tail}`;
}

/** Rank skills for a query by name first, then description (GET /api/skills/search). */
export function rank<S extends { name: string; description: string }>(skills: S[], q: string): (S & { score: number })[] {
  const query = q.toLowerCase().trim();
  const terms = query.split(/[^a-z0-9]+/).filter(Boolean);
  return skills
    .map((s) => {
      const name = s.name.toLowerCase();
      const desc = s.description.toLowerCase();
      let score = name === query ? 100 : name.includes(query) ? 50 : 0;
      for (const t of terms) {
        if (name.split('-').includes(t)) score += 20;
        else if (name.includes(t)) score += 10;
        if (new RegExp(`\\b${t}`).test(desc)) score += 4;
        else if (desc.includes(t)) score += 1;
      }
      return { ...s, score };
    })
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
}

function skillTool(library: SkillLibrary): Tool<{ name: string }> {
  return {
    name: 'Skill',
    provider: 'skill',
    description:
      'Load a skill listed under "Skills" in the system prompt: returns its full instructions (SKILL.md) and the folder of its files in the session workspace. ' +
      'Call it before doing a task the skill covers; then follow the instructions, reading its files with Read and running its scripts with Bash.',
    parameters: {
      type: 'object',
      properties: { name: { type: 'string', description: 'the skill name, as listed' } },
      required: ['name'],
      additionalProperties: false,
    },
    parallel: false,
    async execute({ name }, ctx) {
      const scope = { userId: ctx.userId, sessionId: ctx.sessionId };
      const visible = await library.visible(scope);
      let skill = SKILL_NAME.test(name) ? visible.find((s) => s.name === name) : undefined;
      if (!skill) throw new ToolError(`No skill named ${JSON.stringify(name)}. Available skills: ${visible.map((s) => s.name).join(', ') || 'none'}.`);
      if (skill.scope === 'global') {
        // Its scripts must be inside the computer to run: copy the folder into the session.
        const r = await library.install(scope, name);
        ctx.progress(r === 'installed' ? `skill ${name} copied into .skills/${name}` : `skill ${name} ready`);
        if (r !== 'kept') skill = (await library.sessionSkills(scope)).find((s) => s.name === name && s.valid) ?? skill;
      }
      const dir = `.skills/${name}`;
      const files = skill.files.filter((f) => f.path !== 'SKILL.md').map((f) => `${dir}/${f.path}`);
      return [
        `<skill name="${name}" dir="${dir}">`,
        `Skill folder: ${dir} (relative to the session folder, the working directory of Bash).`,
        files.length ? `Files:\n${files.map((f) => `- ${f}`).join('\n')}` : 'Files: SKILL.md only.',
        skill.allowed_tools.length ? `Tools this skill expects: ${skill.allowed_tools.join(', ')}.` : '',
        '',
        skill.doc?.body ?? '',
        '</skill>',
      ]
        .filter((l, i) => l !== '' || i === 4)
        .join('\n');
    },
  };
}

export interface SkillsPluginOptions {
  promptTokens: number;
  /** Folder of skills to seed into AGENTSVC_HOME/skills (default: the shipped ones). */
  shipped?: string;
}

/**
 * The skills plugin: one `Skill` tool (provider `skill`) offered to sessions that see any skill,
 * a system prompt section listing them within a token budget, and a health check that names
 * invalid global skills. The library is handed back to the service for the REST endpoints.
 */
export function createSkillsPlugin(opts: SkillsPluginOptions): { plugin: AgentsvcPlugin; library: () => SkillLibrary } {
  let library: SkillLibrary | null = null;
  const plugin: AgentsvcPlugin = {
    name: 'skills',
    description: 'Agent Skills: global skills in AGENTSVC_HOME/skills and session skills in .skills/, loaded on demand by the Skill tool',
    version: '1.0.0',
    register(api: PluginApi) {
      const lib = new SkillLibrary(api.config.home, api.files);
      library = lib;
      const seeded = lib.seed(opts.shipped ?? shippedDir());
      if (seeded.length) api.info(`installed shipped skills: ${seeded.join(', ')}`);
      const tool = skillTool(lib);
      api.registerProvider({ name: 'skills', tools: async (scope: SessionScope) => ((await lib.visible(scope)).length ? [tool] : []) });
      api.addPromptContributor({ name: 'skills', contribute: async (ctx) => (ctx.mode === 'planning' ? null : skillsPrompt(await lib.visible(ctx), opts.promptTokens)) });
      api.addHealthCheck({
        id: 'global',
        async run() {
          const all = await lib.globalSkills();
          const bad = all.filter((s) => !s.valid);
          if (bad.length) {
            return {
              status: 'warn',
              detail: `${bad.length} of ${all.length} global skills are invalid and not offered: ${bad.map((s) => `${s.id} (${s.error})`).join('; ')}`,
              fix: `fix SKILL.md of each in ${lib.globalDir}`,
            };
          }
          return { status: 'ok', detail: `${all.length} global skills in ${lib.globalDir}` };
        },
      });
    },
  };
  return {
    plugin,
    library: () => {
      if (!library) throw new Error('the skills plugin is not loaded');
      return library;
    },
  };
}
