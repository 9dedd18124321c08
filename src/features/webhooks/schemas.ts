import { z } from 'zod';

/** The events a webhook may ask for (docs/webhooks.md). */
export const WEBHOOK_EVENTS = ['run.completed', 'run.failed', 'run.waiting', 'budget.warning', 'budget.exceeded', 'scheduled_task.failed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number] | 'webhook.test';

const Url = z.string().min(1).max(2000);
const Events = z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length);

export const CreateWebhookBody = z
  .object({ url: Url, events: Events, description: z.string().max(500).optional(), scope: z.enum(['user', 'install']).default('user') })
  .strict();

export const PatchWebhookBody = z
  .object({ url: Url.optional(), events: Events.optional(), description: z.string().max(500).optional(), enabled: z.boolean().optional() })
  .strict();

export const WebhookParams = z.object({ webhook_id: z.string().min(1).max(100) });

export const Webhook = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string(),
  scope: z.enum(['user', 'install']),
  /** Masked: the secret is answered once, by the POST. */
  secret: z.string(),
  enabled: z.boolean(),
  /** Why it was disabled (a day of failures), else null. */
  disabled_reason: z.string().nullable(),
  failing_since: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const Attempt = z.object({
  id: z.string(),
  delivery_id: z.string(),
  event: z.string(),
  status: z.enum(['delivered', 'failed']),
  response_status: z.number().int().nullable(),
  attempt: z.number().int(),
  at: z.string(),
  error: z.string().nullable(),
});

export const DeliveriesQuery = z
  .object({ limit: z.coerce.number().int().min(1).max(500).default(100), offset: z.coerce.number().int().min(0).max(1_000_000).default(0) })
  .strict();

export const AttemptList = z.object({ items: z.array(Attempt), total: z.number().int() });
