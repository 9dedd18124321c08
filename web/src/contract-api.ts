import type { z } from 'zod';
import type { BudgetList, UsageReport } from '../../src/features/usage/schemas.js';
import { ApiError, api } from './api.js';

/**
 * Routes of optional features: tool policy and audit, usage and budgets. A server without one
 * answers 404 (to a valid key): the screens then say the feature is not available here rather than
 * showing an error. Usage and budgets are typed by the service's own response schemas; the audit
 * and policy shapes below are the ones these screens read.
 */

/** `GET /api/usage`: the caller's model calls grouped by a key, and their sums. */
export type Usage = z.output<typeof UsageReport>;
/** One budget of `GET /api/budgets`, with its use and when it resets. */
export type Budget = z.output<typeof BudgetList>['budgets'][number];

export interface AuditRecord {
  id: string;
  at: string;
  user_id: string;
  session_id: string | null;
  tool_call_id: string | null;
  tool_name: string;
  arguments: unknown;
  action: 'allowed' | 'denied' | 'asked' | 'approved' | 'rejected';
  rule: unknown;
  source: string | null;
  decided_by: string | null;
}
export interface PolicyRule {
  tool: string;
  pattern?: string | null;
  action: 'allow' | 'ask' | 'deny';
  /** Where an effective rule comes from: install, user, role, session. */
  source?: string;
}

/** What an optional route gave: its body, or that the server does not have it. */
export type Optional<T> = { available: true; body: T } | { available: false };

export async function optional<T>(path: string, init?: Parameters<typeof api>[1]): Promise<Optional<T>> {
  try {
    return { available: true, body: await api<T>(path, init) };
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return { available: false };
    throw e;
  }
}

const query = (q: Record<string, string | number | undefined>) => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') s.set(k, String(v));
  const text = s.toString();
  return text ? `?${text}` : '';
};

export const contract = {
  usage: (q: { group_by: string; from?: string; to?: string; user_id?: string }) => optional<Usage>(`/api/usage${query(q)}`),
  budgets: () => optional<{ budgets: Budget[] }>('/api/budgets'),
  audit: (q: { session_id?: string; action?: string; user_id?: string; limit: number; offset: number }) =>
    optional<{ items: AuditRecord[]; total: number }>(`/api/audit${query(q)}`),
  policy: (sessionId: string) => optional<{ rules: PolicyRule[] } | PolicyRule[]>(`/api/sessions/${encodeURIComponent(sessionId)}/policy`),
  setPolicy: (sessionId: string, rules: PolicyRule[]) =>
    api<unknown>(`/api/sessions/${encodeURIComponent(sessionId)}/policy`, { method: 'PUT', json: { rules } }),
};
