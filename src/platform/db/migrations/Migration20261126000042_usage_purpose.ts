import { Migration } from '@mikro-orm/migrations';

export class Migration20261126000042_usage_purpose extends Migration {
  override async up(): Promise<void> {
    // What a model call was for: a turn of the loop, or a compaction's summary (docs/models-and-usage.md: every
    // model call is recorded; a compaction's costs count in the totals and the budgets too).
    this.addSql(`alter table model_usage add column purpose text not null default 'turn'`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table model_usage drop column purpose');
  }
}
