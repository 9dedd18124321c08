import { text } from '../../platform/lib/storable.js';
import { z } from 'zod';
import { RuleSchema } from '../../platform/config/policy.js';
import { AUDIT_ACTIONS } from './audit-store.js';

/** A rule (docs/policy.md); a bad one is 422 naming it (`body.rules.2.action`). */
export { RuleSchema };

export const RulesBody = z.object({ rules: z.array(RuleSchema).max(1000) }).strict();

const SourcedRule = RuleSchema.safeExtend({
  source: z.enum(['install', 'user', 'role', 'session']),
  approved: z.boolean().optional().describe('recorded by "Allow for this session"'),
});

export const EffectivePolicy = z.object({
  default: z.enum(['allow', 'ask', 'deny']),
  unattended: z.enum(['allow', 'deny']),
  rules: z.array(SourcedRule),
});

export const UserPolicy = z.object({ user_id: z.string(), rules: z.array(RuleSchema) });
export const SessionParams = z.object({ session_id: text(100, 1) });
export const UserParams = z.object({ user_id: text(100, 1) });

export const AuditQuerySchema = z
  .object({
    session_id: z.string().min(1).max(100).optional(),
    user_id: z.string().min(1).max(100).optional(),
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    action: z.enum(AUDIT_ACTIONS as [string, ...string[]]).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
  })
  .strict();

export const AuditRecordSchema = z.object({
  id: z.string(),
  at: z.string(),
  user_id: z.string(),
  session_id: z.string(),
  tool_call_id: z.string().nullable(),
  tool_name: z.string(),
  arguments: z.string(),
  action: z.enum(AUDIT_ACTIONS as [string, ...string[]]),
  rule: RuleSchema.nullable(),
  source: z.string().nullable(),
  decided_by: z.string(),
});

export const AuditList = z.object({ items: z.array(AuditRecordSchema), total: z.number().int() });
