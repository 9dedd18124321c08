import { z } from 'zod';
import { STORABLE_MSG, storable, text } from '../../../platform/lib/storable.js';

/** docs/solutions-and-admin.md "Production agents", with their bounds; bodies are strict (an unknown field is a 422). */

export const PreviewUrl = z.object({ name: text(128, 1), url: text(2000, 1) }).strict();

const SKILL_NAME = /^[a-z0-9-]{1,64}$/;
const SkillFile = z.object({ path: text(1000, 1), content: text(1_000_000) }).strict();
/**
 * skills_data: per skill name either the text of its SKILL.md or `{files: [{path, content}]}` (the
 * shape of POST .../skills:upload); instantiate writes them into the agent's computer.
 */
const SkillsData = z
  .record(z.string().regex(SKILL_NAME, 'skill names are 1-64 of [a-z0-9-]'), z.union([text(1_000_000), z.object({ files: z.array(SkillFile).max(500) }).strict()]))
  .refine((o) => Object.keys(o).length <= 200, 'at most 200 skills');

const Fields = {
  name: text(128, 1),
  icon: text(64),
  solution_id: text(128, 1),
  biz_role_id: text(128, 1),
  agent_template: text(200000),
  initial_mode: z.enum(['planning', 'executing']).nullish(),
  skills: z.array(z.string().regex(SKILL_NAME, 'skill names are 1-64 of [a-z0-9-]')).max(200),
  skills_data: SkillsData,
  init_script: text(200000),
  layout_type: text(64),
  preview_urls: z.array(PreviewUrl).max(200),
  runtime_provider: text(256),
  visibility: text(32),
  instructions: text(200000),
};

export const CreateAgentBody = z
  .object({
    ...Fields,
    agent_id: text(128).nullish(),
    icon: Fields.icon.default(''),
    agent_template: Fields.agent_template.default(''),
    skills: Fields.skills.default([]),
    skills_data: Fields.skills_data.default({}),
    init_script: Fields.init_script.default(''),
    layout_type: Fields.layout_type.default('default'),
    preview_urls: Fields.preview_urls.default([]),
    runtime_provider: Fields.runtime_provider.optional(),
    visibility: Fields.visibility.default('workspace'),
    instructions: Fields.instructions.default(''),
  })
  .strict()
  .refine((b) => storable(b), STORABLE_MSG);
export type CreateAgentInput = z.output<typeof CreateAgentBody>;

export const PatchAgentBody = z.object(Fields).partial().strict();
export type PatchAgentInput = z.output<typeof PatchAgentBody>;

export const RecordParams = z.object({ record_id: text(200, 1) });
export const ProviderKeyParams = z.object({ provider_key: text(600, 1) });

export const AgentRecord = z.object({
  record_id: z.string(),
  provider_key: z.string(),
  agent_id: z.string().nullable(),
  name: z.string(),
  icon: z.string(),
  solution_id: z.string(),
  biz_role_id: z.string(),
  agent_template: z.string(),
  initial_mode: z.string().nullable(),
  skills: z.array(z.string()),
  skills_data: z.record(z.string(), z.unknown()),
  init_script: z.string(),
  layout_type: z.string(),
  preview_urls: z.array(z.object({ name: z.string(), url: z.string() })),
  runtime_provider: z.string(),
  visibility: z.string(),
  instructions: z.string(),
  /** created (never instantiated), ready, failed */
  status: z.string(),
  instantiated_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AgentRecordT = z.output<typeof AgentRecord>;

export const Runtime = z.object({ id: z.string(), type: z.enum(['runner', 'model']), name: z.string(), available: z.boolean(), default: z.boolean() });
export type RuntimeT = z.output<typeof Runtime>;

export const AgentList = z.object({ items: z.array(AgentRecord) });
export const AgentByKey = z.object({ provider: z.string(), runtime: Runtime, agent: AgentRecord });
export const Instantiated = z.object({ record_id: z.string(), status: z.enum(['ready', 'failed']), exit_code: z.number().int().nullable(), log: z.string() });
export const SessionStarted = z.object({ session_id: z.string(), route_solution_id: z.string() });
export const Ok = z.object({ ok: z.boolean() });
export const CatalogSolutions = z.object({
  items: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      version: z.string(),
      description: z.string(),
      roles: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), initial_mode: z.string().nullable(), allowed: z.boolean() })),
    }),
  ),
});
