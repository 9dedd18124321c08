import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';

/** docs/solutions-and-admin.md "Admin and production users". */

export const AdminBody = z.object({ user_id: text(128, 1) }).strict();
export const UserParams = z.object({ user_id: text(128, 1) });
export const GrantParams = UserParams.extend({ solution_id: text(128, 1) });
export const GrantBody = z.object({ biz_role_ids: z.array(text(128, 1)).max(100) }).strict();

export const AdminItem = z.object({ user_id: z.string(), username: z.string(), created_at: z.string() });
export const AdminList = z.object({ items: z.array(AdminItem) });
export const Grant = z.object({ user_id: z.string(), solution_id: z.string(), biz_role_ids: z.array(z.string()), default_all: z.boolean() });
export const Ok = z.object({ ok: z.boolean() });

export const ProdUser = z.object({
  id: z.string(),
  username: z.string(),
  email: z.string().nullable(),
  created_at: z.string(),
  last_seen_at: z.string().nullable(),
});
export const ProdUserList = z.object({ items: z.array(ProdUser) });
export const TokenStatusBody = z
  .object({
    users: z
      .array(z.object({ email: text(320).nullish(), name: text(200).nullish(), sub: text(256, 1) }).strict())
      .min(1)
      .max(1000),
  })
  .strict();
export const TokenStatus = z.object({
  items: z.array(z.object({ sub: z.string(), email: z.string().nullable(), ok: z.boolean(), changed: z.boolean(), message: z.string() })),
});
