import { Migration } from '@mikro-orm/migrations';

export class Migration20261121000001_users_keys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table users (
      id text primary key,
      username text not null unique,
      is_admin boolean not null default false,
      avatar_url text null,
      created_at timestamptz not null default now()
    )`);
    this.addSql(`create table api_keys (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      name varchar(50) not null,
      key_hash text not null unique,
      last4 text not null,
      created_at timestamptz not null default now(),
      last_used_at timestamptz null
    )`);
    this.addSql(`create index api_keys_user_id_idx on api_keys(user_id)`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table api_keys');
    this.addSql('drop table users');
  }
}
