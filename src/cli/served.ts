import { recordedServiceUrl } from './terminal/options.js';

/**
 * The URL of a service that already serves `home`: the one its `run/url` names, if it answers
 * GET /api/health. A URL left by a crashed `up` answers nothing (or not as agentsvc): null.
 */
export async function servingUrl(home: string, timeoutMs = 1500): Promise<string | null> {
  const url = recordedServiceUrl(home);
  if (!url) return null;
  try {
    const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json()) as { status?: unknown };
    return res.ok && typeof body?.status === 'string' ? url : null;
  } catch {
    return null;
  }
}
