import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config, SettingItem } from '../../platform/config/index.js';
import { maskSetting } from './credentials.js';

export interface EnvDeps {
  config: Config;
}

const GROUPS: [string, RegExp][] = [
  ['database', /^DATABASE_URL$/],
  ['redis', /^(REDIS_URL|AGENTSVC_NODE_STALE_SECONDS)$/],
  ['model', /^(OPENAI_|AGENTSVC_(MODEL|MODELS|CONTEXT_WINDOW|MAX_MODEL_CALLS|MODEL_TIMEOUT_MS|MAX_FORK_DEPTH|COMPACT_))/],
  ['runner', /^(DOCKER_HOST|AGENTSVC_(RUNNER|ALLOW_UNCONFINED|BASH_|BACKGROUND_|WORKSPACES|SNAPSHOT_))/],
  ['sharing', /^AGENTSVC_(PUBLIC_SHARING|SHARE_)/],
  ['memory', /^AGENTSVC_MEMORY_/],
  ['plugins', /^AGENTSVC_PLUGINS$/],
  ['limits', /_(LIMIT|MAX_[A-Z_]+|PER_[A-Z_]+|MAX_FILES|MAX_TOTAL)$|^AGENTSVC_MAX_|^AGENTSVC_RATE_LIMIT/],
  ['server', /./],
];

const REMARKS: Record<string, string> = {
  server: 'where the service listens and keeps its state',
  database: 'PostgreSQL; empty means the embedded one',
  redis: 'scale-out: events and jobs across nodes',
  model: 'the OpenAI-compatible model endpoint',
  runner: 'where tools run',
  limits: 'bounds on requests and tools',
  sharing: 'public share links',
  memory: 'memories in chats',
  plugins: 'tool providers loaded at start',
};

/** Keys, passwords and credentials in values (URLs, query strings, `token=`) are never shown. */
function mask(item: SettingItem): SettingItem {
  return { ...item, value: maskSetting(item.env_var, item.value), default: maskSetting(item.env_var, item.default) };
}

/** GET /api/env: the settings by group, secrets masked (docs/memories-and-settings.md). The checks are in src/features/diagnostics. */
export const envRoutes: FastifyPluginAsyncZod<EnvDeps> = async (app, deps) => {
  const tags = ['settings'];
  const Item = z.object({ env_var: z.string(), value: z.string(), default: z.string(), remark: z.string() });
  app.get('/api/env', { schema: { tags, response: { 200: z.array(z.object({ group: z.string(), items: z.array(Item) })) } } }, async () => {
    const groups = new Map<string, z.infer<typeof Item>[]>(GROUPS.map(([g]) => [g, []]));
    for (const s of deps.config.settings) {
      const g = GROUPS.find(([, re]) => re.test(s.env_var))![0];
      groups.get(g)!.push({ ...mask(s), remark: REMARKS[g] });
    }
    return [...groups].filter(([, items]) => items.length).map(([group, items]) => ({ group, items }));
  });

};
