import { Migration } from '@mikro-orm/migrations';

export class Migration20261121000002_sessions_turns_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table sessions (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      intent text not null default '',
      status text not null default 'created',
      mode text not null default 'executing',
      model text null,
      solution_id text null,
      biz_role_id text null,
      template_id text null,
      primary_skill_id text null,
      software_factory_id integer null,
      workspace_id text null,
      memory_enabled boolean not null default false,
      is_persistent boolean not null default false,
      shared boolean not null default false,
      is_pinned boolean not null default false,
      env jsonb null,
      disable_tools jsonb not null default '[]',
      solution jsonb not null default '{}',
      session_setup jsonb not null default '{}',
      primary_skill_snapshot jsonb null,
      replay_state jsonb null,
      extra jsonb null,
      extra_created_at timestamptz null,
      extra_updated_at timestamptz null,
      last_seq integer not null default 0,
      run_owner text null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql(`create index sessions_user_created_idx on sessions(user_id, created_at desc)`);
    this.addSql(`create index sessions_status_idx on sessions(status) where status = 'running'`);
    this.addSql(`create table turns (
      id text primary key,
      session_id text not null references sessions(id) on delete cascade,
      sequence integer not null,
      turn_id text not null,
      loop_id text not null default 'root',
      kind text not null default 'message',
      role text not null,
      status text not null,
      blocks jsonb not null default '[]',
      tool_calls jsonb not null default '[]',
      content jsonb null,
      model text null,
      usage jsonb not null default '{"input_tokens":0,"output_tokens":0}',
      duration_ms integer not null default 0,
      started_at timestamptz not null default now(),
      context_window integer not null default 0,
      memory_refs jsonb null,
      parent_fork_tool_call_id text null,
      text text not null default '',
      extra jsonb null,
      unique (session_id, sequence),
      unique (session_id, turn_id)
    )`);
    this.addSql(`create table session_events (
      session_id text not null references sessions(id) on delete cascade,
      seq integer not null,
      name text not null,
      payload jsonb not null,
      created_at timestamptz not null default now(),
      primary key (session_id, seq)
    )`);
    this.addSql(`create index session_events_created_idx on session_events(created_at)`);
    this.addSql(`create table service_instances (
      id text primary key,
      started_at timestamptz not null default now(),
      heartbeat_at timestamptz not null default now()
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table service_instances');
    this.addSql('drop table session_events');
    this.addSql('drop table turns');
    this.addSql('drop table sessions');
  }
}
