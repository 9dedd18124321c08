import { Migration } from '@mikro-orm/migrations';

export class Migration20261124000022_prod_solutions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table prod_solutions (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      name text not null,
      description text not null default '',
      status text not null default 'draft',
      session_id text null,
      flow_session_id text null,
      architecture_session_id text null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql('create index prod_solutions_user on prod_solutions (user_id, created_at)');
    // One row per saved version of a document (kind dag | architecture). The primary key makes two
    // saves against the same base version collide: exactly one of them gets the next number.
    this.addSql(`create table prod_solution_versions (
      solution_id text not null references prod_solutions(id) on delete cascade,
      kind text not null,
      version int not null,
      document jsonb not null,
      message text not null default '',
      published boolean not null default false,
      published_at timestamptz null,
      created_at timestamptz not null default now(),
      primary key (solution_id, kind, version)
    )`);
    this.addSql(`create table prod_solution_agents (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      name text not null,
      runtime_id text not null,
      visibility text not null,
      instructions text not null default '',
      archived boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql('create index prod_solution_agents_user on prod_solution_agents (user_id, created_at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table prod_solution_agents');
    this.addSql('drop table prod_solution_versions');
    this.addSql('drop table prod_solutions');
  }
}
