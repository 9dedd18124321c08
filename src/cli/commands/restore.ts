import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base.js';
import { human, Progress } from '../terminal/progress.js';
import { restoreBackup } from '../../features/backup/restore.js';

export default class Restore extends BaseCommand<typeof Restore> {
  static summary = 'Restore an archive of `agentsvc backup` into an empty home';
  static description =
    'The home (--home, AGENTSVC_HOME) must be empty and not served by `up`; with DATABASE_URL the database must hold no install. --force replaces what is there. The archive is checked as it is read: a corrupt or truncated one is refused and what was written is removed again.';
  static examples = ['<%= config.bin %> restore agentsvc-backup.tar.gz --home /srv/agentsvc', 'DATABASE_URL=postgres://u:p@db/agentsvc2 <%= config.bin %> restore backup.tar.gz --home ~/.agentsvc2'];
  static args = { file: Args.string({ description: 'archive written by agentsvc backup', required: true }) };
  static flags = {
    force: Flags.boolean({ description: 'replace a non-empty home (and a database that holds an install)' }),
    json: Flags.boolean({ description: 'print the result as JSON' }),
  };

  async run(): Promise<void> {
    const progress = new Progress(process.stderr, 'restoring');
    const started = Date.now();
    const r = await restoreBackup(
      { file: this.args.file, home: this.cfg.home, force: this.flags.force, configFile: this.flags.config },
      (s) => progress.update({ bytes: s.bytes, totalBytes: s.totalBytes, entries: s.entries, phase: s.phase }),
    ).catch((e) => {
      progress.clear();
      return this.fail(e);
    });
    progress.finish();
    const seconds = (Date.now() - started) / 1000;
    if (this.flags.json) return this.log(JSON.stringify({ ...r, seconds }, null, 2));
    const rows = Object.values(r.rows).reduce((a, b) => a + b, 0);
    this.log(`restored into ${r.home} (${r.database} database): ${rows} rows, ${r.entries} entries, ${human(r.bytes)} in ${seconds.toFixed(1)} s; start it with agentsvc up --home ${r.home}`);
  }
}
