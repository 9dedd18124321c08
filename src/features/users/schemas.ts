import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';

export const ApiKeyPublic = z.object({
  id: z.string(),
  name: z.string(),
  masked: z.string(),
  plaintext: z.string().nullable(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
});

export const KeyName = z.object({ name: text(50, 1) }).strict();
export const KeyParams = z.object({ key_id: text(100, 1) });
export const KeyCreated = z.object({ key: ApiKeyPublic, plaintext: z.string() });

export const Me = z.object({
  id: z.string(),
  username: z.string(),
  avatar_url: z.string().nullable(),
  created_at: z.string(),
  is_admin: z.boolean(),
  role: z.enum(['admin', 'member', 'viewer']),
  /** For a browser signed in by cookie: send it as X-CSRF-Token with every change (docs/identity.md). */
  csrf_token: z.string().nullable(),
  /** Bytes in the user's workspaces and their quota (0: none), docs/operations.md. */
  storage: z.object({ used_bytes: z.number().int(), quota_bytes: z.number().int() }),
});
