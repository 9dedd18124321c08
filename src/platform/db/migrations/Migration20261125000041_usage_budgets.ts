import { Migration } from '@mikro-orm/migrations';

export class Migration20261125000041_usage_budgets extends Migration {
  override async up(): Promise<void> {
    // One row per model call (docs/models-and-usage.md). No foreign key on the session: what was spent stays
    // spent when a session is deleted (a budget must not reset by deleting sessions).
    this.addSql(`create table model_usage (
      id bigserial primary key,
      user_id text not null references users(id) on delete cascade,
      session_id text not null,
      turn_id text,
      run_id text,
      model text not null,
      outcome text not null,
      input_tokens integer not null,
      output_tokens integer not null,
      cached_input_tokens integer not null default 0,
      cost double precision,
      estimated boolean not null default false,
      attempts integer not null default 1,
      fallback_from text,
      started_at timestamptz not null,
      duration_ms integer not null,
      ttft_ms integer
    )`);
    this.addSql('create index model_usage_user_time on model_usage (user_id, started_at)');
    this.addSql('create index model_usage_session_time on model_usage (session_id, started_at)');
    this.addSql('create index model_usage_time on model_usage (started_at)');
    // A user's budgets (set by an admin) and a session's (set by its owner), as one JSON list each.
    this.addSql(`create table budgets (
      scope text not null check (scope in ('user', 'session')),
      subject_id text not null,
      -- whose: the user (scope user) or the session's owner (a session's budget answers only to it)
      user_id text not null references users(id) on delete cascade,
      budgets jsonb not null,
      updated_at timestamptz not null default now(),
      primary key (scope, subject_id)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table budgets');
    this.addSql('drop table model_usage');
  }
}
