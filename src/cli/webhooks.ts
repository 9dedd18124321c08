import { Args } from '@oclif/core';
import { ClientError } from './terminal/api.js';
import { table } from './terminal/tables.js';
import type { Api } from './terminal/api.js';
import type { z } from 'zod';
import type { Attempt, Webhook } from '../features/webhooks/schemas.js';

/** A webhook as `GET /api/webhooks` answers it (docs/webhooks.md), and one attempt of its log: the service's schemas. */
export type WebhookView = z.infer<typeof Webhook>;
export type AttemptView = z.infer<typeof Attempt>;

/** The `<id>` argument of the commands on one webhook. */
export const webhookArg = { id: Args.string({ description: 'webhook id (wh_...)', required: true }) };

export const webhookPath = (id: string, rest = '') => `/api/webhooks/${encodeURIComponent(id)}${rest}`;

/** GET/PATCH/... one webhook; a 404 names it. */
export async function onWebhook<T>(api: Api, method: string, id: string, rest = '', body?: unknown): Promise<T> {
  try {
    return await api.json<T>(method, webhookPath(id, rest), body);
  } catch (e) {
    throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `webhook ${id} not found`) : e;
  }
}

const minute = (iso: string) => iso.replace('T', ' ').slice(0, 16);

/** What a webhook's state says in one word, with why when it is off or failing. */
export function webhookState(w: WebhookView): string {
  if (!w.enabled) return w.disabled_reason ? `disabled (${w.disabled_reason})` : 'disabled';
  return w.failing_since ? `failing since ${minute(w.failing_since)} UTC` : 'enabled';
}

export function webhookTable(items: WebhookView[]): string {
  return table(
    ['ID', 'STATE', 'SCOPE', 'EVENTS', 'URL'],
    items.map((w) => [w.id, webhookState(w), w.scope, w.events.join(','), w.url]),
  );
}

export function attemptTable(items: AttemptView[]): string {
  return table(
    ['AT (UTC)', 'EVENT', 'STATUS', 'HTTP', 'ATTEMPT', 'DELIVERY', 'ERROR'],
    items.map((a) => [a.at.replace('T', ' ').slice(0, 19), a.event, a.status, a.response_status === null ? '-' : String(a.response_status), String(a.attempt), a.delivery_id, a.error ?? '']),
  );
}
