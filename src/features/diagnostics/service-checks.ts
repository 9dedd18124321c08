import type { Check, CheckResult } from './checks.js';

/** Checks only the running service can make (docs/memories-and-settings.md): Redis, the model endpoint, the search backend. */
export interface ServiceProbes {
  /** null without REDIS_URL. */
  redis(): boolean | null;
  model: { baseUrl: string; apiKey: string };
  searchBackend?: string;
}

const r = (id: string, status: CheckResult['status'], message: string, fix: string | null = null): CheckResult => ({ id, status, message, fix });

export function serviceChecks(p: ServiceProbes): Check[] {
  return [
    {
      id: 'redis',
      run: async () => {
        const up = p.redis();
        if (up === null) return r('redis', 'ok', 'not configured: one node, events and jobs in-process');
        return up ? r('redis', 'ok', 'connected') : r('redis', 'fail', 'REDIS_URL is set but Redis is unreachable: events do not cross nodes', 'check REDIS_URL and that Redis runs');
      },
    },
    {
      id: 'model',
      run: async () => {
        const base = p.model.baseUrl;
        const url = `${base.replace(/\/$/, '')}/models`;
        const noKey = !p.model.apiKey;
        const restart = '(environment or AGENTSVC_HOME/config.json), then restart `agentsvc up`';
        try {
          const res = await fetch(url, { headers: { authorization: `Bearer ${p.model.apiKey}` }, signal: AbortSignal.timeout(2500) });
          if (res.ok) return r('model', 'ok', `${base} answers`);
          if (res.status === 401 || res.status === 403) {
            return noKey
              ? r('model', 'fail', `${base} answered ${res.status}: no API key is set (OPENAI_API_KEY is empty)`, `set OPENAI_API_KEY ${restart}`)
              : r('model', 'fail', `${base} answered ${res.status}: it refused the API key`, `check OPENAI_API_KEY ${restart}`);
          }
          // Some OpenAI-compatible servers have no model list: chat may still work.
          return r('model', res.status === 404 ? 'warn' : 'fail', `GET ${url} answered ${res.status}`, `check OPENAI_BASE_URL ${restart}`);
        } catch (e) {
          const err = e as Error & { cause?: { code?: string } };
          const why = err.name === 'TimeoutError' ? 'no answer within 2.5 s' : (err.cause?.code ?? err.message);
          return r('model', 'fail', `${base} unreachable: ${why}${noKey ? ' (and OPENAI_API_KEY is empty)' : ''}`, `check the network, or set OPENAI_BASE_URL to an OpenAI-compatible endpoint ${restart}`);
        }
      },
    },
    {
      id: 'search',
      run: async () =>
        p.searchBackend ? r('search', 'ok', `backend ${p.searchBackend}`) : r('search', 'warn', 'no search backend: WebSearch is not offered', 'set AGENTSVC_SEARCH_BACKEND to offer WebSearch'),
    },
  ];
}
