import { z } from 'zod';
import { STORABLE_MSG, storable, text } from '../../platform/lib/storable.js';

/** Payload annotations (docs/solutions-and-admin.md): notes on an entry, turn or tool call of the caller's sessions. */

export const MAX_DATA_BYTES = 64 * 1024;
export const MAX_PER_PAYLOAD = 200;

const Data = z
  .record(z.string(), z.unknown())
  .refine(storable, STORABLE_MSG)
  .refine((v) => Buffer.byteLength(JSON.stringify(v)) <= MAX_DATA_BYTES, `at most ${MAX_DATA_BYTES} bytes of JSON`);

export const PayloadParams = z.object({ payload_id: text(128, 1) });
export const AnnotationParams = PayloadParams.extend({ annotation_id: text(128, 1) });

export const CreateAnnotation = z
  .object({
    label: text(128).default(''),
    note: text(10_000).default(''),
    data: Data.default({}),
  })
  .strict();

export const PatchAnnotation = z
  .object({ label: text(128), note: text(10_000), data: Data })
  .partial()
  .strict();

export const Annotation = z.object({
  id: z.string(),
  payload_id: z.string(),
  label: z.string(),
  note: z.string(),
  data: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AnnotationT = z.infer<typeof Annotation>;

export const AnnotationList = z.object({ items: z.array(Annotation) });
export const AnnotationDeleted = z.object({ id: z.string(), deleted: z.boolean() });
