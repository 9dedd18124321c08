import { Migration } from '@mikro-orm/migrations';

export class Migration20261124000031_workspaces_issues extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table workspaces (
      id text primary key,
      name text not null,
      description text not null default '',
      owner_id text not null references users(id) on delete cascade,
      issue_seq integer not null default 0,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql(`create table workspace_members (
      workspace_id text not null references workspaces(id) on delete cascade,
      user_id text not null references users(id) on delete cascade,
      role text not null,
      created_at timestamptz not null default now(),
      primary key (workspace_id, user_id)
    )`);
    this.addSql('create index workspace_members_user on workspace_members (user_id)');
    // The agents that work issues of a workspace; owner_id: whose agent it is (its sessions are theirs).
    this.addSql(`create table workspace_agents (
      workspace_id text not null references workspaces(id) on delete cascade,
      agent_id text not null,
      owner_id text not null references users(id) on delete cascade,
      name text not null,
      added_by text not null,
      created_at timestamptz not null default now(),
      primary key (workspace_id, agent_id)
    )`);
    // One assistant session per (workspace, member, business role).
    this.addSql(`create table workspace_assistant_sessions (
      workspace_id text not null references workspaces(id) on delete cascade,
      user_id text not null references users(id) on delete cascade,
      biz_role_id text not null,
      session_id text not null references sessions(id) on delete cascade,
      updated_at timestamptz not null default now(),
      primary key (workspace_id, user_id, biz_role_id)
    )`);
    this.addSql(`create table issues (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      number integer not null,
      parent_id text references issues(id) on delete set null,
      title text not null,
      description text not null default '',
      priority text not null,
      status text not null,
      assignee text,
      assignee_type text,
      assignee_id text,
      project text,
      labels jsonb not null default '[]'::jsonb,
      created_by text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (workspace_id, number)
    )`);
    this.addSql('create index issues_parent on issues (parent_id)');
    this.addSql('create index issues_workspace on issues (workspace_id, status, priority)');
    // The timeline: one row per change, in order (seq).
    this.addSql(`create table issue_events (
      seq bigserial primary key,
      issue_id text not null references issues(id) on delete cascade,
      kind text not null,
      actor_type text not null,
      actor_id text,
      field text,
      old_value jsonb,
      new_value jsonb,
      data jsonb,
      created_at timestamptz not null default now()
    )`);
    this.addSql('create index issue_events_issue on issue_events (issue_id, seq)');
    this.addSql(`create table issue_task_runs (
      id text primary key,
      issue_id text not null references issues(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      agent_id text not null,
      user_id text not null,
      session_id text references sessions(id) on delete set null,
      status text not null,
      final_answer text,
      error text,
      input_tokens integer not null default 0,
      output_tokens integer not null default 0,
      started_at timestamptz not null default now(),
      finished_at timestamptz
    )`);
    this.addSql('create index issue_task_runs_issue on issue_task_runs (issue_id, started_at)');
    this.addSql(`create index issue_task_runs_open on issue_task_runs (status) where status in ('running', 'waiting_for_input')`);
    this.addSql('create index issue_task_runs_session on issue_task_runs (session_id)');
  }

  override async down(): Promise<void> {
    for (const t of ['issue_task_runs', 'issue_events', 'issues', 'workspace_assistant_sessions', 'workspace_agents', 'workspace_members', 'workspaces']) this.addSql(`drop table ${t}`);
  }
}
