import { Migration } from '@mikro-orm/migrations';

export class Migration20261123000001_scheduled_tasks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table scheduled_tasks (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      title text not null,
      prompt text not null,
      cron text not null,
      timezone text not null,
      enabled boolean not null default true,
      expires_at timestamptz,
      skip_confirmations boolean not null default false,
      model text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql('create index scheduled_tasks_user on scheduled_tasks (user_id, created_at)');
    // One row per occurrence that ran: the unique key makes a second fire of it (another node, a
    // retried job) insert nothing, so it runs once in the whole install.
    this.addSql(`create table scheduled_task_runs (
      id text primary key,
      task_id text not null references scheduled_tasks(id) on delete cascade,
      scheduled_for timestamptz not null,
      session_id text references sessions(id) on delete set null,
      status text not null,
      error text,
      triggered_at timestamptz not null default now(),
      finished_at timestamptz,
      unique (task_id, scheduled_for)
    )`);
    this.addSql(`create index scheduled_task_runs_open on scheduled_task_runs (status) where status = 'running'`);
    this.addSql('create index scheduled_task_runs_session on scheduled_task_runs (session_id)');
    // The database-backed jobs adapter (src/platform/infra/jobs-db.ts).
    this.addSql(`create table job_schedules (
      id text primary key,
      cron text not null,
      tz text not null,
      next_at timestamptz not null,
      claimed_until timestamptz
    )`);
    this.addSql('create index job_schedules_due on job_schedules (next_at)');
    // One id per install (per database): names this install's BullMQ queue, so installs sharing a
    // Redis never take each other's jobs.
    this.addSql('create table installation (id text primary key)');
    this.addSql('insert into installation (id) values (gen_random_uuid()::text)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table installation');
    this.addSql('drop table job_schedules');
    this.addSql('drop table scheduled_task_runs');
    this.addSql('drop table scheduled_tasks');
  }
}
