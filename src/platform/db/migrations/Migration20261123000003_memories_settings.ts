import { Migration } from '@mikro-orm/migrations';

export class Migration20261123000003_memories_settings extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table memories (
      id serial primary key,
      user_id text not null references users(id) on delete cascade,
      type text not null default 'feedback',
      content text not null,
      skill_name text,
      record_type text,
      scope text,
      owner text,
      topic text,
      ext_memory_id text,
      superseded_by integer,
      write_reason text,
      source_session text not null default '',
      hit_count integer not null default 0,
      last_hit_at timestamptz,
      disabled boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz,
      tsv tsvector generated always as (to_tsvector('simple', content)) stored
    )`);
    this.addSql('create index memories_user on memories (user_id, created_at desc)');
    this.addSql('create index memories_tsv on memories using gin (tsv)');
    this.addSql(`create table user_preferences (
      user_id text not null references users(id) on delete cascade,
      key text not null,
      value text not null,
      primary key (user_id, key)
    )`);
    this.addSql(`create table env_buckets (
      user_id text not null references users(id) on delete cascade,
      bucket text not null,
      env jsonb not null default '{}',
      primary key (user_id, bucket)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table env_buckets');
    this.addSql('drop table user_preferences');
    this.addSql('drop table memories');
  }
}
