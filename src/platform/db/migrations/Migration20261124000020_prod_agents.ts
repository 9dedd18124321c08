import { Migration } from '@mikro-orm/migrations';

export class Migration20261124000020_prod_agents extends Migration {
  override async up(): Promise<void> {
    // A production agent belongs to its user; `spec` holds the create/PATCH fields as sent
    // (validated), the rest is what instantiate learnt.
    this.addSql(`create table prod_agents (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      agent_id text null,
      name text not null,
      solution_id text not null,
      biz_role_id text not null,
      runtime_provider text not null,
      spec jsonb not null,
      status text not null default 'created',
      instance_log text null,
      instantiated_at timestamptz null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql('create index prod_agents_user on prod_agents (user_id, created_at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table prod_agents');
  }
}
