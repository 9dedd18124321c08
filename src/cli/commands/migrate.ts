import { BaseCommand } from '../base.js';
import { migrate, openDatabase } from '../../platform/db/index.js';

export default class Migrate extends BaseCommand<typeof Migrate> {
  static summary = 'Apply pending database migrations';
  static description = 'Against DATABASE_URL, or the embedded PostgreSQL in AGENTSVC_HOME (joined if `up` is running, else started for the duration).';
  static examples = ['<%= config.bin %> migrate', 'DATABASE_URL=postgres://u:p@db/agentsvc <%= config.bin %> migrate'];

  async run(): Promise<void> {
    const db = await openDatabase(this.cfg, { role: 'cli' }).catch((e) => this.fail(e));
    this.onClose(() => db.close());
    const applied = await migrate(db);
    this.log(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'database is up to date');
  }
}
