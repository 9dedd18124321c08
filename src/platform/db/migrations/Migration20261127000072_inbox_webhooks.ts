import { Migration } from '@mikro-orm/migrations';

export class Migration20261127000072_inbox_webhooks extends Migration {
  override async up(): Promise<void> {
    // The database-backed delayed jobs (src/platform/infra/delayed-db.ts): one row per topic and key.
    this.addSql(`create table delayed_jobs (
      id text primary key,
      topic text not null,
      key text not null,
      data jsonb not null default '{}',
      run_at timestamptz not null,
      version integer not null default 0,
      claimed_until timestamptz
    )`);
    this.addSql('create index delayed_jobs_due on delayed_jobs (run_at)');
    // An approval whose rule has timeout_seconds: when it is decided by itself (docs/inbox.md).
    this.addSql(`create table approval_deadlines (
      tool_call_id text primary key,
      session_id text not null references sessions(id) on delete cascade,
      user_id text not null,
      asked_at timestamptz not null default now(),
      deadline timestamptz not null,
      on_timeout text not null
    )`);
    // Webhooks (docs/webhooks.md).
    this.addSql(`create table webhooks (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      scope text not null default 'user',
      url text not null,
      events jsonb not null,
      description text not null default '',
      secret text not null,
      enabled boolean not null default true,
      disabled_reason text,
      failing_since timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql('create index webhooks_user on webhooks (user_id)');
    this.addSql(`create table webhook_deliveries (
      id text primary key,
      seq bigserial,
      webhook_id text not null references webhooks(id) on delete cascade,
      event text not null,
      session_id text,
      body text not null,
      status text not null default 'pending',
      attempt integer not null default 0,
      next_at timestamptz not null default now(),
      claimed_until timestamptz,
      created_at timestamptz not null default now(),
      finished_at timestamptz
    )`);
    this.addSql(`create index webhook_deliveries_pending on webhook_deliveries (webhook_id, session_id, seq) where status = 'pending'`);
    this.addSql(`create table webhook_attempts (
      id text primary key,
      delivery_id text not null references webhook_deliveries(id) on delete cascade,
      webhook_id text not null references webhooks(id) on delete cascade,
      event text not null,
      status text not null,
      response_status integer,
      attempt integer not null,
      at timestamptz not null default now(),
      error text
    )`);
    this.addSql('create index webhook_attempts_hook on webhook_attempts (webhook_id, at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table webhook_attempts');
    this.addSql('drop table webhook_deliveries');
    this.addSql('drop table webhooks');
    this.addSql('drop table approval_deadlines');
    this.addSql('drop table delayed_jobs');
  }
}
