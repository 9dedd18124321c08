import { z } from 'zod';
import { STORABLE_MSG, storable, text } from '../../../platform/lib/storable.js';

/** docs/solutions-and-admin.md "Production solutions (multi-agent DAG)"; bodies are strict. */

const Json = z.record(z.string(), z.unknown());
const Objects = (max: number) => z.array(Json).max(max);

export const Status = z.enum(['draft', 'active', 'archived']);

export const CreateBody = z
  .object({
    name: text(200, 1),
    description: text(5000).nullish(),
    session_id: text(128, 1).nullish(),
    ai_assist: z.boolean().default(false),
    flow_session_id: text(128, 1).nullish(),
    flow_ai_assist: z.boolean().nullish(),
    architecture_session_id: text(128, 1).nullish(),
    architecture_ai_assist: z.boolean().default(false),
  })
  .strict();
export type CreateInput = z.output<typeof CreateBody>;

export const PatchBody = z.object({ name: text(200, 1).optional(), description: text(5000).optional(), status: Status.optional() }).strict();
export const SessionBody = z.object({ session_id: text(128, 1) }).strict();
export const IdParams = z.object({ prod_solution_id: text(128, 1) });
export const VersionParams = IdParams.extend({ version: z.coerce.number().int().min(1).max(2147483647) });

/** Documents are free-form below their top-level arrays; validate/publish judge their content. */
export const DagPayload = z
  .object({ steps: Objects(2000).optional(), nodes: Objects(5000).optional(), edges: Objects(20000).optional(), viewport: Json.nullish() })
  .strict()
  .refine(storable, STORABLE_MSG);
export const ArchitecturePayload = z
  .object({ nodes: Objects(5000), viewport: Json.nullish() })
  .strict()
  .refine(storable, STORABLE_MSG);

const message = text(2000).nullish();
const version = z.number().int().min(1).max(2147483647);

export const SaveDagBody = z.object({ base_version: version, dag: DagPayload, message }).strict();
export const SaveArchBody = z.object({ base_version: version, architecture: ArchitecturePayload, message }).strict();
export const ValidateDagBody = z.object({ dag: z.unknown() }).strict();
export const ValidateArchBody = z.object({ architecture: z.unknown() }).strict();
export const PublishDagBody = z.object({ dag: DagPayload.optional(), version: version.optional(), message }).strict();
export const PublishArchBody = z.object({ architecture: ArchitecturePayload.optional(), version: version.optional(), message }).strict();
export const RollbackBody = z.object({ from_version: version, message }).strict();

export const Record = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  status: Status,
  session_id: z.string().nullable(),
  flow_session_id: z.string().nullable(),
  architecture_session_id: z.string().nullable(),
  dag_version: z.number().int(),
  architecture_version: z.number().int(),
  published_dag_version: z.number().int().nullable(),
  published_architecture_version: z.number().int().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type RecordT = z.output<typeof Record>;
export const RecordList = z.object({ items: z.array(Record) });

export const Validation = z.object({ valid: z.boolean(), errors: z.array(z.object({ path: z.string(), message: z.string() })) });

const DocBase = {
  prod_solution_id: z.string(),
  version: z.number().int(),
  message: z.string(),
  published: z.boolean(),
  published_at: z.string().nullable(),
  published_version: z.number().int().nullable(),
  created_at: z.string(),
};
export const DagDoc = z.object({ ...DocBase, dag: Json });
export const ArchDoc = z.object({ ...DocBase, architecture: Json });
export const VersionItem = z.object({ version: z.number().int(), message: z.string(), published: z.boolean(), published_at: z.string().nullable(), created_at: z.string(), nodes: z.number().int() });
export const VersionList = z.object({ items: z.array(VersionItem) });
export const Ok = z.object({ ok: z.boolean() });

// Production-solution agents.
export const AgentCreateBody = z.object({ name: text(128, 1), runtime_id: text(256, 1), visibility: text(32).default('workspace'), instructions: text(200000).nullish() }).strict();
export const AgentPatchBody = z.object({ name: text(128, 1).optional(), runtime_id: text(256, 1).optional(), visibility: text(32).optional(), instructions: text(200000).optional(), archived: z.boolean().optional() }).strict();
export const AgentParams = z.object({ agent_id: text(128, 1) });
export const AgentListQuery = z.object({ include_archived: z.enum(['true', 'false', '1', '0']).default('false').transform((v) => v === 'true' || v === '1') });
