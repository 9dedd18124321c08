import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';

/** Published apps (docs/solutions-and-admin.md): a session folder served read-only and public at /apps/<session_id>/. */

export const PublishBody = z
  .object({
    session_id: text(100, 1),
    /** A folder of the session's workspace (relative, or absolute as the computer sees it); default the root. */
    working_dir: text(4096).optional(),
  })
  .strict();

export const AppParams = z.object({ session_id: text(100, 1) });

export const PublishedApp = z.object({
  session_id: z.string(),
  url: z.string(),
  working_dir: z.string(),
  published_at: z.string(),
});
export type PublishedAppT = z.infer<typeof PublishedApp>;

export const PublishedAppList = z.object({ items: z.array(PublishedApp) });
export const Unpublished = z.object({ session_id: z.string(), unpublished: z.boolean() });
