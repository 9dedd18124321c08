import { Migration } from '@mikro-orm/migrations';

export class Migration20261121000003_session_tasks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table session_tasks (
      session_id text not null references sessions(id) on delete cascade,
      id integer not null,
      subject text not null,
      description text not null default '',
      status text not null default 'pending',
      loop_id text not null default 'root',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (session_id, id)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table session_tasks');
  }
}
