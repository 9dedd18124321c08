import { Migration } from '@mikro-orm/migrations';

export class Migration20261125000050_tool_policy extends Migration {
  override async up(): Promise<void> {
    // A user's rules, set by an admin (docs/policy.md).
    this.addSql(`create table user_policies (
      user_id text primary key references users(id) on delete cascade,
      rules jsonb not null default '[]'::jsonb,
      updated_at timestamptz not null default now()
    )`);
    // A session's own rules (its owner) and the person's "Allow for this session" answers.
    this.addSql(`create table session_policies (
      session_id text primary key references sessions(id) on delete cascade,
      rules jsonb not null default '[]'::jsonb,
      approvals jsonb not null default '[]'::jsonb,
      updated_at timestamptz not null default now()
    )`);
    // The audit trail outlives the session it speaks of: no reference to sessions.
    this.addSql(`create table policy_audit (
      id text primary key,
      at timestamptz not null default clock_timestamp(),
      user_id text not null references users(id) on delete cascade,
      session_id text not null,
      tool_call_id text not null,
      tool_name text not null,
      arguments text not null,
      action text not null,
      rule jsonb,
      source text,
      decided_by text not null
    )`);
    this.addSql('create index policy_audit_user_at on policy_audit (user_id, at desc)');
    this.addSql('create index policy_audit_session_at on policy_audit (session_id, at desc)');
    this.addSql('create index policy_audit_at on policy_audit (at desc)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table policy_audit');
    this.addSql('drop table session_policies');
    this.addSql('drop table user_policies');
  }
}
