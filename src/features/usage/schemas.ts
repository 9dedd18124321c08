import { z } from 'zod';
import { budgetSpec } from '../../platform/config/models.js';
import { text } from '../../platform/lib/storable.js';

/** docs/models-and-usage.md: usage reports and budgets. */

/** A day (`YYYY-MM-DD`, midnight in the install's time zone) or an ISO 8601 instant. */
const when = z
  .string()
  .max(40)
  .refine((v) => (/^\d{4}-\d{2}-\d{2}$/.test(v) ? isCalendarDay(v) : /^\d{4}-\d{2}-\d{2}T/.test(v) && isCalendarDay(v.slice(0, 10)) && Number.isFinite(Date.parse(v))), 'a date YYYY-MM-DD or an ISO 8601 date-time');

/** `2026-02-28` is a day, `2026-13-01` and `2026-02-30` are not (Date.UTC would roll them over). */
export function isCalendarDay(v: string): boolean {
  const [y, m, d] = v.split('-').map(Number);
  const at = new Date(Date.UTC(y, m - 1, d));
  return at.getUTCFullYear() === y && at.getUTCMonth() === m - 1 && at.getUTCDate() === d;
}

export const UsageQuery = z
  .object({
    from: when.optional(),
    to: when.optional(),
    group_by: z.enum(['day', 'model', 'session', 'user', 'credential']).default('day'),
    session_id: text(128, 1).optional(),
    user_id: text(128, 1).optional(),
  })
  .strict();

const Totals = { calls: z.number().int(), input_tokens: z.number().int(), output_tokens: z.number().int(), cost: z.number().nullable() };
export const UsageReport = z.object({
  items: z.array(z.object({ key: z.string(), ...Totals })),
  /** The sums over every item. */
  total: z.object(Totals),
});

export const BudgetBody = z.object({ budgets: z.array(budgetSpec).max(10) }).strict();
export const BudgetsQuery = z.object({ session_id: text(128, 1).optional() }).strict();
export const BudgetList = z.object({
  budgets: z.array(
    z.object({
      scope: z.enum(['install', 'user', 'session']),
      session_id: z.string().optional(),
      period: z.enum(['day', 'month', 'total']),
      max_tokens: z.number().int().nullable(),
      max_cost: z.number().nullable(),
      used_tokens: z.number().int(),
      used_cost: z.number(),
      resets_at: z.string().nullable(),
    }),
  ),
});
export const UserParams = z.object({ user_id: text(128, 1) });
export const SessionParams = z.object({ session_id: text(128, 1) });
