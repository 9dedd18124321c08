import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';

/** Request and response shapes of docs/scale-out.md "Scheduled tasks" (records as docs/scale-out.md decides). */

const When = z.string().datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone (e.g. 2026-12-01T09:00:00Z)' });

const fields = {
  title: text(200, 1),
  prompt: text(1_000_000, 1),
  cron: text(100, 1),
  timezone: text(100, 1),
  enabled: z.boolean(),
  expires_at: When.nullable(),
  skip_confirmations: z.boolean(),
  model: text(200).nullable(),
};

export const CreateScheduledTaskBody = z
  .object({
    ...fields,
    timezone: fields.timezone.optional(),
    enabled: fields.enabled.default(true),
    expires_at: fields.expires_at.optional(),
    skip_confirmations: fields.skip_confirmations.default(false),
    model: fields.model.optional(),
  })
  .strict();
export type CreateScheduledTaskBody = z.infer<typeof CreateScheduledTaskBody>;

export const PatchScheduledTaskBody = z.object(fields).partial().strict();
export type PatchScheduledTaskBody = z.infer<typeof PatchScheduledTaskBody>;

export const ScheduledTaskIdParams = z.object({ task_id: text(100, 1) });

export const CalendarQuery = z.object({ from: When, to: When });

export const RunRecord = z.object({
  id: z.string(),
  task_id: z.string(),
  session_id: z.string().nullable(),
  status: z.enum(['running', 'completed', 'failed']),
  error: z.string().nullable(),
  triggered_at: z.string(),
  finished_at: z.string().nullable(),
});
export type RunRecord = z.infer<typeof RunRecord>;

export const ScheduledTask = z.object({
  id: z.string(),
  title: z.string(),
  prompt: z.string(),
  cron: z.string(),
  timezone: z.string(),
  enabled: z.boolean(),
  expires_at: z.string().nullable(),
  skip_confirmations: z.boolean(),
  model: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  next_run_at: z.string().nullable(),
  last_run: RunRecord.nullable(),
});
export type ScheduledTask = z.infer<typeof ScheduledTask>;

export const Calendar = z.array(z.object({ task_id: z.string(), title: z.string(), occurrences: z.array(z.string()) }));
