import { Migration } from '@mikro-orm/migrations';

export class Migration20261125000040_run_identity extends Migration {
  override async up(): Promise<void> {
    // The run a session is in (or was last in) and what started it: written by the claim in the
    // same statement, read by recovery so a run closed by another node is told to the hooks with
    // its own id and origin (scheduled and task runs settle from that).
    this.addSql('alter table sessions add column run_id text, add column run_origin text');
  }
}
