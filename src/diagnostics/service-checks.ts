import type { Check, CheckResult } from './checks.js';

/** Checks only the running service can make (CONTRACT 10): Redis, the model endpoint, the search backend. */
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
        const url = `${p.model.baseUrl.replace(/\/$/, '')}/models`;
        try {
          const res = await fetch(url, { headers: { authorization: `Bearer ${p.model.apiKey}` }, signal: AbortSignal.timeout(2500) });
          if (res.ok) return r('model', 'ok', `${p.model.baseUrl} answers`);
          const fix = res.status === 401 ? 'check OPENAI_API_KEY' : 'check OPENAI_BASE_URL';
          return r('model', res.status === 404 ? 'warn' : 'fail', `GET /models answered ${res.status}`, fix);
        } catch (e) {
          return r('model', 'fail', `${p.model.baseUrl} unreachable: ${(e as Error).message}`, 'check OPENAI_BASE_URL and the network');
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
