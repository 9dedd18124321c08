import { z } from 'zod';
import { STORABLE_MSG, storable, text } from '../../platform/lib/storable.js';

/**
 * PostgreSQL stores neither NUL nor an unpaired surrogate: a message holding one is refused (422)
 * before anything is stored (the run's start stores the user turn in its claim statement).
 */
const Text = (max: number) => z.string().max(max).refine(storable, STORABLE_MSG);

const Part = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: Text(1_000_000) }),
  z.object({
    type: z.literal('image_url'),
    image_url: z.object({
      url: z.string().refine((u) => /^(https?:\/\/|data:image\/[a-z0-9.+-]+;base64,)/i.test(u), 'must be an http(s) URL or a data:image/...;base64 URL'),
      detail: z.enum(['auto', 'low', 'high']).optional(),
    }),
  }),
]);

export const ChatSend = z.object({
  session_id: z.string().min(1).max(100),
  message: z.union([Text(1_000_000), z.array(Part).min(1).max(100)]).default(''),
  mode: z.enum(['planning', 'executing']).optional(),
  headless: z.boolean().optional(),
  output_schema: z.record(z.string(), z.unknown()).optional(),
  whatif: z
    .object({
      from_step: z.number().int().min(0),
      quotes: z.array(Text(100_000)).max(50).default([]),
      deprecate_entry_ids: z.array(z.string().min(1).max(100)).max(1000).default([]),
    })
    .strict()
    .optional(),
  askuser_answer: z
    .object({
      tool_call_id: z.string().min(1),
      selections: z.record(z.string(), z.array(z.number().int().min(0))).default({}),
      custom: z.record(z.string(), Text(100_000)).default({}),
    })
    .optional(),
});
export type ChatSend = z.infer<typeof ChatSend>;

export const SessionRef = z.object({ session_id: text(100, 1) });
export const Subscribe = SessionRef.extend({ since_seq: z.number().int().min(0).optional() });

export function issues(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`).join('; ');
}
