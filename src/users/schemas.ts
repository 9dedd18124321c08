import { z } from 'zod';

export const ApiKeyPublic = z.object({
  id: z.string(),
  name: z.string(),
  masked: z.string(),
  plaintext: z.string().nullable(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
});

export const KeyName = z.object({ name: z.string().min(1).max(50) }).strict();
export const KeyParams = z.object({ key_id: z.string().min(1).max(100) });
export const KeyCreated = z.object({ key: ApiKeyPublic, plaintext: z.string() });

export const Me = z.object({
  id: z.string(),
  username: z.string(),
  avatar_url: z.string().nullable(),
  created_at: z.string(),
  is_admin: z.boolean(),
});
