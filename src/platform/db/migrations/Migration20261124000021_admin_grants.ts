import { Migration } from '@mikro-orm/migrations';

export class Migration20261124000021_admin_grants extends Migration {
  override async up(): Promise<void> {
    // No row for (user, solution): every role of the solution is allowed (default_all).
    this.addSql(`create table biz_role_grants (
      user_id text not null references users(id) on delete cascade,
      solution_id text not null,
      role_ids jsonb not null,
      updated_at timestamptz not null default now(),
      primary key (user_id, solution_id)
    )`);
    // Production users (SSO): the identity provider's subject and e-mail.
    this.addSql('alter table users add column email text null');
    this.addSql('alter table users add column sso_sub text null');
    this.addSql('create unique index users_sso_sub on users (sso_sub) where sso_sub is not null');
  }

  override async down(): Promise<void> {
    this.addSql('drop table biz_role_grants');
    this.addSql('alter table users drop column email, drop column sso_sub');
  }
}
