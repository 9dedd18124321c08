import { Migration } from '@mikro-orm/migrations';

/**
 * `agentsvc login --browser` (docs/identity.md): a sign-in request of kind `loopback`, holding the
 * CLI's loopback redirect URI so that the code is exchanged with the same one.
 */
export class Migration20261127000075_signin_loopback extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table signin_requests drop constraint signin_requests_kind_check');
    this.addSql(`alter table signin_requests add constraint signin_requests_kind_check check (kind in ('browser', 'device', 'loopback'))`);
    this.addSql('alter table signin_requests add column redirect_uri text null');
  }

  override async down(): Promise<void> {
    this.addSql(`delete from signin_requests where kind = 'loopback'`);
    this.addSql('alter table signin_requests drop column redirect_uri');
    this.addSql('alter table signin_requests drop constraint signin_requests_kind_check');
    this.addSql(`alter table signin_requests add constraint signin_requests_kind_check check (kind in ('browser', 'device'))`);
  }
}
