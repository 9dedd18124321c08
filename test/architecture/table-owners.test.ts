import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * Tables with owners (issue #27): each table is named in SQL by one store, the only code that
 * reads or writes it; route files hold no SQL at all. The cross-table SQL found when the rule was
 * made is listed below as debt: an entry may only go (the test fails on a stale one, so the list
 * shrinks as stores gain the methods their callers need), never be added.
 */
const root = resolve(import.meta.dirname, '../..');
const src = join(root, 'src');

/** Every table and the file of its store. */
const OWNERS: Record<string, string> = {
  users: 'src/features/users/service.ts',
  api_keys: 'src/features/users/service.ts',
  sessions: 'src/core/sessions/service.ts',
  turns: 'src/core/conversation/turn-store.ts',
  session_events: 'src/core/events/event-store.ts',
  service_instances: 'src/core/engine/run-store.ts',
  session_branches: 'src/features/timetravel/store.ts',
  checkpoints: 'src/features/timetravel/store.ts',
  session_tasks: 'src/core/agent-tools/session-tasks.ts',
  memories: 'src/features/memories/store.ts',
  payload_annotations: 'src/features/annotations/store.ts',
  user_preferences: 'src/features/user-settings/store.ts',
  env_buckets: 'src/features/user-settings/store.ts',
  share_links: 'src/features/sharing/store.ts',
  published_apps: 'src/features/apps/store.ts',
  model_usage: 'src/features/usage/store.ts',
  budgets: 'src/features/usage/store.ts',
  user_policies: 'src/features/policy/store.ts',
  session_policies: 'src/features/policy/store.ts',
  policy_audit: 'src/features/policy/audit-store.ts',
  scheduled_tasks: 'src/features/scheduling/store.ts',
  scheduled_task_runs: 'src/features/scheduling/store.ts',
  installation: 'src/features/scheduling/store.ts',
  job_schedules: 'src/platform/infra/jobs-db.ts',
  delayed_jobs: 'src/platform/infra/delayed-db.ts',
  approval_deadlines: 'src/features/inbox/store.ts',
  webhooks: 'src/features/webhooks/store.ts',
  webhook_deliveries: 'src/features/webhooks/store.ts',
  webhook_attempts: 'src/features/webhooks/store.ts',
  workspaces: 'src/features/teams/store.ts',
  workspace_members: 'src/features/teams/store.ts',
  workspace_agents: 'src/features/teams/store.ts',
  workspace_assistant_sessions: 'src/features/teams/store.ts',
  issues: 'src/features/teams/issues.ts',
  issue_events: 'src/features/teams/issues.ts',
  issue_task_runs: 'src/features/teams/issue-task-runs.ts',
  prod_agents: 'src/features/production/agents/service.ts',
  prod_solution_agents: 'src/features/production/solution-agents/service.ts',
  prod_solutions: 'src/features/production/solutions/records.ts',
  prod_solution_versions: 'src/features/production/solutions/records.ts',
  biz_role_grants: 'src/features/admin/service.ts',
  model_credentials: 'src/features/model-keys/store.ts',
  user_links: 'src/features/identity/store.ts',
  signins: 'src/features/identity/store.ts',
  signin_requests: 'src/features/identity/store.ts',
  identity_audit: 'src/features/identity/store.ts',
};

/** Whole-install copies: they read and write every table by design (listed, not debt). */
const WHOLE_INSTALL: Record<string, string> = {
  'src/features/backup/table-copy.ts': 'backup and restore copy every table in one snapshot',
  'src/platform/db/schema.ts': 'migrations and schema checks',
};

/**
 * Cross-table SQL left from when the rule was made: `file: tables it names but does not own`, each
 * with the reason it stays. The list may only shrink (a stale entry fails the test), never grow.
 */
const DEBT: Record<string, string[]> = {
  // The resting position of a session is sessions.last_seq, written by the run lease; the events
  // module starts below sessions (sessions needs the engine, which needs events), so it cannot ask them.
  'src/core/events/event-store.ts': ['sessions'],
  // The run start's claim: one statement (one round trip) takes the session's lease, reserves its
  // seq block past the stored events, reads the memory flag and the default env bucket, and gives
  // the user turn its sequence.
  'src/core/engine/run-store.ts': ['env_buckets', 'memories', 'session_events', 'sessions', 'turns'],
  // A turn is written on the session's active branch and read along its branch chain (a recursive
  // query over session_branches from sessions.active_branch) in the statement that reads the turns.
  'src/core/conversation/turn-store.ts': ['session_branches', 'sessions'],
  // The versions of a production solution's documents: written here, read by the record list of
  // the same store (records.ts) in its one select.
  'src/features/production/solutions/documents.ts': ['prod_solution_versions'],
  // A checkpoint goes on the session's active branch in the insert itself, and restores hold the
  // session's row lock for their whole transaction, so no run starts in between.
  'src/features/timetravel/store.ts': ['sessions'],
};

const migrations = join(src, 'platform', 'db', 'migrations');
const TABLES = new Set(
  readdirSync(migrations).flatMap((f) => [...readFileSync(join(migrations, f), 'utf8').matchAll(/create table (?:if not exists )?"?([a-z_]+)"?/gi)].map((m) => m[1])),
);

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (p === migrations) return [];
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The tables a file names in SQL (after from, join, into, update, table). */
function named(text: string): string[] {
  return [...TABLES].filter((table) => new RegExp(`\\b(from|join|into|update|table)\\s+${table}\\b`, 'i').test(text));
}

const files = tsFiles(src).map((p) => ({ path: relative(root, p), text: readFileSync(p, 'utf8') }));

t.test('every table has an owner', async (t) => {
  const unowned = [...TABLES].filter((x) => !OWNERS[x]);
  t.same(unowned, [], 'a new table is listed in OWNERS with its store');
  t.same(
    Object.keys(OWNERS).filter((x) => !TABLES.has(x)),
    [],
    'no owner for a table that no migration creates',
  );
});

t.test('only its owner names a table (listed debt aside)', async (t) => {
  const found: Record<string, string[]> = {};
  for (const f of files) {
    if (WHOLE_INSTALL[f.path]) continue;
    const foreign = named(f.text).filter((x) => OWNERS[x] !== f.path);
    if (foreign.length) found[f.path] = foreign.sort();
  }
  const added = Object.entries(found).flatMap(([file, tables]) => tables.filter((x) => !DEBT[file]?.includes(x)).map((x) => `${file} names ${x} (owner: ${OWNERS[x]})`));
  t.same(added, [], "new SQL on another store's table: add a method to its owner instead");
  const stale = Object.entries(DEBT).flatMap(([file, tables]) => tables.filter((x) => !found[file]?.includes(x)).map((x) => `${file}: ${x}`));
  t.same(stale, [], 'debt paid: remove these entries from DEBT');
  t.comment(`cross-table debt left: ${Object.values(DEBT).flat().length} (file, table) pairs in ${Object.keys(DEBT).length} files`);
});

t.test('route files hold no SQL', async (t) => {
  const withSql = files.filter((f) => /routes?\.ts$/.test(f.path) && (/\.sql\s*[<(]/.test(f.text) || named(f.text).length)).map((f) => f.path);
  t.same(withSql, [], 'routes call stores');
});
