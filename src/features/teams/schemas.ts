import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';

/** Workspaces and issues (docs/solutions-and-admin.md "Workspaces and issues"). Lists answer `{items}`. */

export const PRIORITIES = ['urgent', 'high', 'medium', 'low', 'none'] as const;
export const STATUSES = ['backlog', 'todo', 'in_progress', 'in_review', 'done', 'blocked', 'cancelled'] as const;
export const ASSIGNEE_TYPES = ['member', 'agent', 'squad'] as const;
export const Priority = z.enum(PRIORITIES);
export const Status = z.enum(STATUSES);
export const AssigneeType = z.enum(ASSIGNEE_TYPES);
/** The business role of a workspace's assistant session when none is named. */
export const ASSISTANT_ROLE = 'workspace-assistant';
export const MEMBER_ROLES = ['owner', 'member'] as const;

export const CreateTeamWorkspace = z.object({ name: text(128, 1), description: text(1000).default('') }).strict();
export const PatchTeamWorkspace = z.object({ name: text(128, 1), description: text(1000) }).partial().strict();
export const TeamWorkspaceParams = z.object({ workspace_id: text(128, 1) });

export const TeamWorkspace = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  owner_id: z.string(),
  role: z.enum(MEMBER_ROLES),
  member_count: z.number().int(),
  agent_count: z.number().int(),
  issue_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TeamWorkspaceT = z.infer<typeof TeamWorkspace>;

export const Member = z.object({ user_id: z.string(), username: z.string(), role: z.enum(MEMBER_ROLES), joined_at: z.string() });
export const AddMember = z
  .object({ user_id: text(128, 1).optional(), username: text(128, 1).optional(), role: z.literal('member').default('member') })
  .strict()
  .refine((b) => (b.user_id == null) !== (b.username == null), 'give exactly one of user_id and username');
export const MemberParams = TeamWorkspaceParams.extend({ user_id: text(128, 1) });

export const TeamWorkspaceAgent = z.object({
  agent_id: z.string(),
  name: z.string(),
  owner_id: z.string(),
  added_by: z.string(),
  added_at: z.string(),
  /** The production agent's record, as its owner sees it (null once deleted). */
  agent: z.record(z.string(), z.unknown()).nullable(),
});
export const AddAgent = z.object({ agent_id: text(128, 1) }).strict();
export const AgentParams = TeamWorkspaceParams.extend({ agent_id: text(128, 1) });

export const AssistantQuery = z.object({ biz_role_id: text(128, 1).default(ASSISTANT_ROLE) });
export const AssistantBody = z.object({ biz_role_id: text(128, 1), session_id: text(128, 1) }).strict();

const Labels = z
  .array(text(64, 1))
  .max(50)
  .refine((l) => new Set(l).size === l.length, 'labels must be unique');

const issueFields = {
  title: text(500, 1),
  description: text(100_000),
  priority: Priority,
  status: Status,
  assignee: text(200).nullable(),
  assignee_type: AssigneeType.nullable(),
  assignee_id: text(128, 1).nullable(),
  project: text(200).nullable(),
  labels: Labels,
  parent_id: text(128, 1).nullable(),
};

export const CreateIssue = z
  .object({
    ...issueFields,
    description: issueFields.description.default(''),
    priority: Priority.default('none'),
    status: Status.default('backlog'),
    assignee: issueFields.assignee.optional(),
    assignee_type: issueFields.assignee_type.optional(),
    assignee_id: issueFields.assignee_id.optional(),
    project: issueFields.project.optional(),
    labels: Labels.default([]),
    parent_id: issueFields.parent_id.optional(),
  })
  .strict();
export type CreateIssueT = z.output<typeof CreateIssue>;

export const PatchIssue = z.object(issueFields).partial().strict();
export type PatchIssueT = z.output<typeof PatchIssue>;

export const IssueParams = TeamWorkspaceParams.extend({ issue_id: text(128, 1) });

export const Issue = z.object({
  id: z.string(),
  workspace_id: z.string(),
  number: z.number().int(),
  parent_id: z.string().nullable(),
  title: z.string(),
  description: z.string(),
  priority: Priority,
  status: Status,
  assignee: z.string().nullable(),
  assignee_type: AssigneeType.nullable(),
  assignee_id: z.string().nullable(),
  project: z.string().nullable(),
  labels: z.array(z.string()),
  created_by: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type IssueT = z.infer<typeof Issue>;

/** Comma-separated values of an enum (`status=todo,in_progress`). */
const csv = <T extends [string, ...string[]]>(values: T) =>
  text(500)
    .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(z.enum(values)).min(1).max(values.length));

export const IssueQuery = z.object({
  status: csv([...STATUSES]).optional(),
  priority: csv([...PRIORITIES]).optional(),
  assignee_id: text(128, 1).optional(),
  assignee_type: AssigneeType.optional(),
  label: text(64, 1).optional(),
  parent_id: text(128, 1).optional(),
  q: text(500, 1).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
export type IssueQueryT = z.output<typeof IssueQuery>;

export const IssuePage = z.object({ items: z.array(Issue), total: z.number().int(), limit: z.number().int(), offset: z.number().int() });

export const GroupedQuery = z.object({ by: z.enum(['status', 'priority', 'assignee']).default('status'), limit: z.coerce.number().int().min(1).max(200).default(50) });
export const Grouped = z.object({
  by: z.string(),
  groups: z.array(z.object({ key: z.string().nullable(), count: z.number().int(), items: z.array(Issue) })),
});

export const ChildProgressQuery = z.object({ parent_id: text(128, 1).optional() });
export const ChildProgress = z.object({
  items: z.array(z.object({ issue_id: z.string(), total: z.number().int(), done: z.number().int(), by_status: z.record(z.string(), z.number().int()) })),
});

export const TimelineEvent = z.object({
  id: z.string(),
  issue_id: z.string(),
  kind: z.string(),
  actor_type: z.enum(['member', 'agent', 'system']),
  actor_id: z.string().nullable(),
  field: z.string().nullable(),
  from: z.unknown(),
  to: z.unknown(),
  data: z.record(z.string(), z.unknown()).nullable(),
  created_at: z.string(),
});
export type TimelineEventT = z.infer<typeof TimelineEvent>;
export const Comment = z.object({ body: text(20_000, 1) }).strict();

export const RUN_STATUSES = ['starting', 'running', 'waiting_for_input', 'completed', 'failed', 'interrupted'] as const;
export const IssueTaskRun = z.object({
  id: z.string(),
  issue_id: z.string(),
  agent_id: z.string(),
  session_id: z.string().nullable(),
  status: z.enum(RUN_STATUSES),
  final_answer: z.string().nullable(),
  error: z.string().nullable(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
});
export type IssueTaskRunT = z.infer<typeof IssueTaskRun>;

export const Usage = z.object({
  issue_id: z.string(),
  runs: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  items: z.array(z.object({ run_id: z.string(), agent_id: z.string(), session_id: z.string().nullable(), status: z.string(), input_tokens: z.number().int(), output_tokens: z.number().int() })),
});

export const items = <T extends z.ZodTypeAny>(s: T) => z.object({ items: z.array(s) });
