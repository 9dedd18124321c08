import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';

export const SkillFile = z.object({ path: z.string(), size: z.number().int() });
export const Skill = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  scope: z.enum(['global', 'session']),
  source: z.string(),
  dir: z.string(),
  allowed_tools: z.array(z.string()),
  files: z.array(SkillFile),
  valid: z.boolean(),
  error: z.string().nullable(),
});
export const SkillDetail = Skill.extend({ content: z.string().nullable(), body: z.string().nullable() });
export const SearchResult = Skill.pick({ id: true, name: true, description: true, source: true }).extend({ score: z.number() });

export const SessionParams = z.object({ session_id: text(100, 1) });
export const SkillParams = z.object({ skill_id: z.string().min(1).max(200) });
export const SearchQuery = z.object({ q: z.string().min(1).max(500), limit: z.coerce.number().int().min(1).max(50).default(10) });
export const ResourcesQuery = z.object({ limit: z.coerce.number().int().min(1).max(2000).default(500) });

export const UploadBody = z
  .object({
    name: z.string().min(1).max(200),
    files: z.array(z.object({ path: z.string().max(1000), content: text(Number.MAX_SAFE_INTEGER) }).strict()).max(10_000),
  })
  .strict();
export const UploadResult = z.object({ name: z.string(), skill_dir: z.string(), file_count: z.number().int(), overwritten: z.boolean() });

export const InstallResult = z.object({
  installed: z.array(z.string()),
  current: z.array(z.string()),
  kept: z.array(z.string()),
  skill_dir: z.string(),
});
export const ResyncResult = z.object({
  detail: z.string(),
  session_skills: z.array(z.string()),
  invalid: z.array(z.object({ name: z.string(), error: z.string() })),
  refreshed: z.array(z.string()),
});
export const SessionStats = z.object({
  session_id: z.string(),
  skills: z.number().int(),
  session_skills: z.number().int(),
  global_skills: z.number().int(),
  invalid: z.number().int(),
  loads: z.record(z.string(), z.number().int()),
  total_loads: z.number().int(),
  failed_loads: z.number().int(),
});
export const StoreStats = z.object({
  skills: z.number().int(),
  valid: z.number().int(),
  invalid: z.number().int(),
  by_source: z.record(z.string(), z.number().int()),
  files: z.number().int(),
  bytes: z.number().int(),
  prompt_budget_tokens: z.number().int(),
  prompt_tokens: z.number().int(),
});
export const Resource = z.object({ skill: z.string(), path: z.string(), kind: z.enum(['script', 'reference', 'asset', 'other']), size: z.number().int() });
