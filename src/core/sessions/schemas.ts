import { z } from 'zod';
import { ENV_RESERVED } from '../../../runners/shared.js';
import { STORABLE_MSG, storable, text } from '../../platform/lib/storable.js';

export { storable, text };

/**
 * Request and response shapes of the Sessions REST API (docs/sessions-and-runs.md "Sessions"). Bodies are strict:
 * an unknown field is a 422 naming it, never silently dropped.
 */

const refId = text(256).nullish();

export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const ENV_MAX_ENTRIES = 200;
export const EnvMap = z
  .record(
    z
      .string()
      .max(256)
      .regex(ENV_KEY, 'env names match ^[A-Za-z_][A-Za-z0-9_]*$')
      .refine((k) => !ENV_RESERVED.test(k), 'loader and shell start-up variables (LD_*, BASH_ENV, ENV, GCONV_PATH, GLIBC_TUNABLES, ...) and AGENTSVC_* are not allowed'),
    text(65536),
  )
  .refine((env) => Object.keys(env).length <= ENV_MAX_ENTRIES, `at most ${ENV_MAX_ENTRIES} entries`);

export const Mode = z.enum(['planning', 'executing']);

export const SessionParams = z.object({ session_id: text(100, 1) });
export const ClientTaskParams = z.object({ task_id: text(500, 1) });

export const CreateSessionBody = z
  .object({
    intent: text(10000).default(''),
    solution_id: refId,
    biz_role_id: refId,
    template_id: refId,
    primary_skill_id: refId,
    /** Checked against the configured models by the service (the list is known only at start). */
    model: text(200).nullish(),
    software_factory_id: z.number().int().min(0).max(2147483647).nullish(),
    memory_enabled: z.boolean().nullish(),
    is_persistent: z.boolean().default(false),
    env: EnvMap.nullish(),
    workspace_id: refId,
    disable_tools: z.array(text(200)).max(500).nullish(),
    mode: Mode.optional(),
  })
  .strict();
export type CreateSessionInput = z.output<typeof CreateSessionBody>;

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
  q: text(500).optional(),
  template_id_prefix: text(256).optional(),
  /** The sessions of this team workspace (its members' sessions, for any member) instead of the caller's own. */
  workspace_id: text(256, 1).optional(),
});
export type ListInput = z.output<typeof ListQuery>;

export const PatchSessionBody = z.object({ intent: text(10000).optional() }).strict();
export const EnvBody = z.object({ env: EnvMap }).strict();
export const PinBody = z.object({ pinned: z.boolean() }).strict();
export const SharingBody = z.object({ shared: z.boolean() }).strict();
export const MemoryBody = z.object({ memory_enabled: z.boolean() }).strict();
export const ExtraBody = z.object({ extra: z.record(z.string(), z.unknown()).refine(storable, STORABLE_MSG) }).strict();

const JsonObject = z.record(z.string(), z.unknown());

export const SessionPublic = z.object({
  id: z.string(),
  intent: z.string(),
  status: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  user_id: z.string(),
  solution_id: z.string().nullable(),
  biz_role_id: z.string().nullable(),
  model: z.string().nullable(),
  shared: z.boolean(),
  is_pinned: z.boolean(),
  memory_enabled: z.boolean(),
  is_persistent: z.boolean(),
  replay_state: JsonObject.nullable(),
  mode: Mode,
  template_id: z.string().nullable(),
});

export const SessionDetail = SessionPublic.extend({
  solution: JsonObject,
  session_setup: JsonObject,
  primary_skill_snapshot: JsonObject.nullable(),
  /** `owner`, or `reader` for a teammate reading it through a team workspace (docs/identity.md). */
  viewer_role: z.enum(['owner', 'reader']),
  primary_skill_id: z.string().nullable(),
  software_factory_id: z.number().int().nullable(),
  workspace_id: z.string().nullable(),
  disable_tools: z.array(z.string()),
  /** Present only once env was set (at create or with PUT .../env). */
  env: z.record(z.string(), z.string()).optional(),
});

export const SessionList = z.object({
  items: z.array(SessionPublic),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
  content_match_truncated: z.boolean(),
});

export const Created = z.object({ session_id: z.string() });
export const Deleted = z.object({ deleted: z.boolean() });
export const Shared = z.object({ shared: z.boolean() });
export const MemoryState = z.object({ memory_enabled: z.boolean() });

export const ExtraInfo = z.object({
  session_id: z.string(),
  extra: JsonObject,
  created_at: z.string().nullable(),
  updated_at: z.string().nullable(),
});
export const ExtraByClientTask = ExtraInfo.extend({ session_id: z.string().nullable() });

export type SessionPublicT = z.output<typeof SessionPublic>;
export type SessionDetailT = z.output<typeof SessionDetail>;
export type ExtraInfoT = z.output<typeof ExtraInfo>;
