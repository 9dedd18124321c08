import { Migration } from '@mikro-orm/migrations';

export class Migration20261123000002_timetravel extends Migration {
  override async up(): Promise<void> {
    // Turns form a tree of branches: `main`, and branches that fork from a parent at a turn sequence
    // (the child sees the parent's turns before it). Nothing is deleted when a branch is left.
    this.addSql(`alter table turns add column branch_id text not null default 'main'`);
    this.addSql(`alter table sessions add column active_branch text not null default 'main'`);
    this.addSql(`create table session_branches (
      session_id text not null references sessions(id) on delete cascade,
      id text not null,
      parent_id text,
      fork_sequence integer,
      tip_tree text,
      deprecated jsonb not null default '[]',
      created_at timestamptz not null default now(),
      primary key (session_id, id)
    )`);
    this.addSql(`create table checkpoints (
      id text primary key,
      session_id text not null references sessions(id) on delete cascade,
      turn_id text not null,
      branch_id text not null,
      sequence integer not null,
      label text not null,
      files integer not null default 0,
      tree text,
      skipped jsonb not null default '[]',
      created_at timestamptz not null default now()
    )`);
    this.addSql('create index checkpoints_session on checkpoints (session_id, sequence)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table checkpoints');
    this.addSql('drop table session_branches');
    this.addSql('alter table sessions drop column active_branch');
    this.addSql('alter table turns drop column branch_id');
  }
}
