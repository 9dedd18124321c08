import { Migration } from '@mikro-orm/migrations';

export class Migration20261123000004_share_links extends Migration {
  override async up(): Promise<void> {
    // Only the SHA-256 of a share token is stored; deleting a session deletes (revokes) its links.
    this.addSql(`create table share_links (
      id text primary key,
      token_hash text not null unique,
      session_id text not null references sessions(id) on delete cascade,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      revoked_at timestamptz
    )`);
    this.addSql('create index share_links_session on share_links (session_id)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table share_links');
  }
}
