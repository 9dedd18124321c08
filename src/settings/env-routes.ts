import { statfs } from 'node:fs/promises';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config, SettingItem } from '../config/index.js';
import { text } from '../lib/storable.js';
import { Errors } from '../server/errors.js';

export interface Check {
  check_id: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
}

export interface EnvDeps {
  config: Config;
  database(): Promise<boolean>;
  /** null without REDIS_URL. */
  redis(): boolean | null;
  runner(): Promise<{ ok: boolean; error?: string; warning?: string; summary?: string }>;
}

const GROUPS: [string, RegExp][] = [
  ['database', /^DATABASE_URL$/],
  ['redis', /^REDIS_URL$/],
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

/** Keys, passwords and credentials in URLs are never shown. */
function mask(item: SettingItem): SettingItem {
  const secret = /(_KEY|_PASSWORD|_TOKEN|_SECRET)$/.test(item.env_var);
  const m = (v: string) => (secret && v ? '****' : v.replace(/(\/\/[^/:@]*:)[^@/]*@/, '$1****@'));
  return { ...item, value: m(item.value), default: m(item.default) };
}

/** GET /api/env (settings by group, secrets masked) and the diagnostics of /api/env/check (CONTRACT 10). */
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

  const checks: Record<string, () => Promise<Omit<Check, 'check_id'>>> = {
    database: async () => ((await deps.database()) ? { status: 'ok', detail: 'PostgreSQL answers' } : { status: 'fail', detail: 'PostgreSQL does not answer' }),
    redis: async () => {
      const r = deps.redis();
      if (r === null) return { status: 'ok', detail: 'not configured: one node, events and jobs in-process' };
      return r ? { status: 'ok', detail: 'connected' } : { status: 'fail', detail: 'REDIS_URL is set but Redis is unreachable: events do not cross nodes' };
    },
    runner: async () => {
      const c = await deps.runner();
      if (!c.ok) return { status: 'fail', detail: c.error ?? 'unavailable' };
      return { status: c.warning ? 'warn' : 'ok', detail: c.warning ?? c.summary ?? `${deps.config.runner.kind} runner ready` };
    },
    model: async () => {
      const url = `${deps.config.model.baseUrl.replace(/\/$/, '')}/models`;
      try {
        const r = await fetch(url, { headers: { authorization: `Bearer ${deps.config.model.apiKey}` }, signal: AbortSignal.timeout(5000) });
        if (r.ok) return { status: 'ok', detail: `${deps.config.model.baseUrl} answers` };
        return { status: r.status === 404 ? 'warn' : 'fail', detail: `GET /models answered ${r.status}${r.status === 401 ? ' (check OPENAI_API_KEY)' : ''}` };
      } catch (e) {
        return { status: 'fail', detail: `${deps.config.model.baseUrl} unreachable: ${(e as Error).message}` };
      }
    },
    search: async () =>
      deps.config.web.searchBackend ? { status: 'ok', detail: `backend ${deps.config.web.searchBackend}` } : { status: 'warn', detail: 'no search backend: WebSearch is not offered (AGENTSVC_SEARCH_BACKEND)' },
    disk: async () => {
      const s = await statfs(deps.config.home);
      const free = s.bavail * s.bsize;
      const gib = (free / 2 ** 30).toFixed(1);
      if (free < 100 * 2 ** 20) return { status: 'fail', detail: `${gib} GiB free in ${deps.config.home}` };
      return { status: free < 2 ** 30 ? 'warn' : 'ok', detail: `${gib} GiB free in ${deps.config.home}` };
    },
  };
  const run = async (id: string): Promise<Check> => {
    try {
      return { check_id: id, ...(await checks[id]()) };
    } catch (e) {
      return { check_id: id, status: 'fail', detail: (e as Error).message };
    }
  };

  app.get('/api/env/check', { schema: { tags } }, async (req, reply) => {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    for (const id of Object.keys(checks)) {
      if (req.raw.destroyed) return;
      res.write(`event: check\ndata: ${JSON.stringify(await run(id))}\n\n`);
    }
    res.end('event: end\ndata: {}\n\n');
  });
  app.post('/api/env/check/:check_id', { schema: { tags, params: z.object({ check_id: text(50, 1) }) } }, async (req) => {
    if (!(req.params.check_id in checks)) throw Errors.notFound('check');
    return run(req.params.check_id);
  });
};
