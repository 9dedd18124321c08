import { Migration } from '@mikro-orm/migrations';

export class Migration20261124000030_apps_annotations extends Migration {
  override async up(): Promise<void> {
    // One published folder per session; deleting the session unpublishes it.
    this.addSql(`create table published_apps (
      session_id text primary key references sessions(id) on delete cascade,
      user_id text not null references users(id) on delete cascade,
      working_dir text not null,
      published_at timestamptz not null default now()
    )`);
    this.addSql('create index published_apps_user on published_apps (user_id, published_at)');
    // Annotations hang on a payload (entry, turn or tool call id) of one of the owner's sessions.
    this.addSql(`create table payload_annotations (
      id text primary key,
      user_id text not null references users(id) on delete cascade,
      session_id text not null references sessions(id) on delete cascade,
      payload_id text not null,
      label text not null,
      note text not null,
      data jsonb not null default '{}'::jsonb,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
    this.addSql('create index payload_annotations_payload on payload_annotations (user_id, payload_id, created_at)');
    this.addSql('create index payload_annotations_session on payload_annotations (session_id)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table payload_annotations');
    this.addSql('drop table published_apps');
  }
}
