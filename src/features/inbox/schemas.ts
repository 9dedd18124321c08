import { z } from 'zod';

export const InboxQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
  .strict();

export const InboxItem = z
  .object({
    session_id: z.string(),
    session_intent: z.string(),
    tool_call_id: z.string(),
    kind: z.enum(['question', 'approval']),
    asked_at: z.string(),
    /** When an approval with a timeout is decided by itself, and how. */
    timeout_at: z.string().nullable(),
    on_timeout: z.enum(['deny', 'allow']).nullable(),
    tool_name: z.string(),
  })
  .passthrough();

/** One item as the route answers it; what the item asks (questions, or the approval's call) passes through. */
export type InboxEntry = z.infer<typeof InboxItem>;

export const InboxList = z.object({ items: z.array(InboxItem), total: z.number().int() });

export const AnswerBody = z
  .object({
    session_id: z.string().min(1).max(100),
    selections: z.record(z.string().max(4), z.array(z.number().int().min(0).max(100)).max(100)),
    custom: z.record(z.string().max(4), z.string().max(10_000)).optional(),
  })
  .strict();

export const AnswerParams = z.object({ tool_call_id: z.string().min(1).max(100) });
export const Answered = z.object({ session_id: z.string(), run_id: z.string() });
