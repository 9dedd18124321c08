import { z } from 'zod';
import { SessionParams } from '../sessions/schemas.js';

/**
 * Shapes of the workspace-file endpoints (docs/sessions-and-runs.md "Workspace files of a session"). The file or
 * folder path is the route's wildcard: relative to the session folder, or absolute as the
 * computer sees it; empty means the workspace root.
 */

export { SessionParams };

export const PathParams = SessionParams.extend({ '*': z.string().max(4096).default('') });

/** A bare file name: what `rename` and `share-file` accept as the last path segment. */
export const BareName = z
  .string()
  .min(1)
  .max(255)
  .refine((s) => !s.includes('/') && !s.includes('\\'), 'must be a bare name without "/"')
  .refine((s) => s !== '.' && s !== '..', 'must not be "." or ".."')
  .refine((s) => !s.includes('\0'), 'must not contain NUL');

export const Entry = z.object({
  name: z.string(),
  type: z.enum(['file', 'directory']),
  /** Files only. */
  size: z.number().int().optional(),
});
export const Listing = z.array(Entry);

export const WriteBody = z.object({ content: z.string() }).strict();
export const Success = z.object({ success: z.boolean() });
export const Deleted = z.object({ deleted: z.boolean() });

/** POST .../files/* carries `/rename` or `/copy` at the end of the wildcard; copy has no body. */
export const FileActionBody = z.object({ new_name: BareName.optional() }).strict().nullish();
export const PathResult = z.object({ path: z.string() });

export const UploadResult = z.object({
  uploaded: z.array(z.string()),
  failed: z.array(z.object({ name: z.string(), error: z.string() })),
});

export const ShareFileBody = z
  .object({
    source_path: z.string().min(1).max(4096),
    link_name: z.union([BareName, z.literal('')]).default(''),
    share_folder: z.string().max(4096).default(''),
  })
  .strict();
export const ShareFileResult = z.object({ path: z.string(), target: z.string() });
