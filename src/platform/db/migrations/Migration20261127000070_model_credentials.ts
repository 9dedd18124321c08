import { Migration } from '@mikro-orm/migrations';

export class Migration20261127000070_model_credentials extends Migration {
  override async up(): Promise<void> {
    // A user's own API key for a model entry (docs/model-keys.md): only the AES-256-GCM ciphertext,
    // its IV and tag, which key of the install's keyring sealed it (key_id) and the scheme's
    // version; `masked` is what GET shows. Never the key itself.
    this.addSql(`create table model_credentials (
      user_id text not null references users(id) on delete cascade,
      model_id text not null,
      version smallint not null,
      key_id text not null,
      iv bytea not null,
      tag bytea not null,
      ciphertext bytea not null,
      masked text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (user_id, model_id)
    )`);
    this.addSql('create index model_credentials_key_id on model_credentials (key_id)');
    // Whose key paid for a model call: the user's own or the install's.
    this.addSql(`alter table model_usage add column credential text not null default 'install'`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table model_usage drop column credential');
    this.addSql('drop table model_credentials');
  }
}
