import { basename } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { ClientCommand } from '../terminal/command.js';
import { human, Progress } from '../terminal/progress.js';
import { uploadArchive } from '../terminal/transfer.js';

export default class Import extends ClientCommand<typeof Import> {
  static summary = 'Import a session archive made by `agentsvc export` as a new session of yours';
  static description =
    'Uploads the ZIP to POST /api/sessions/import: everything gets new ids, nothing is created when the archive is refused. --preview reads it without creating anything. A progress line shows on a terminal, nothing when piped.';
  static examples = ['<%= config.bin %> import backup.zip', '<%= config.bin %> import backup.zip --name "restored report" --json', '<%= config.bin %> import backup.zip --preview'];
  static args = { file: Args.string({ description: 'the ZIP archive', required: true }) };
  static flags = {
    name: Flags.string({ description: 'title of the new session (default: the exported one)' }),
    solution: Flags.string({ description: 'solution id for the new session' }),
    preview: Flags.boolean({ description: 'only read the archive and tell what it holds' }),
  };

  async run(): Promise<void> {
    const fields: Record<string, string> = {};
    if (this.flags.name !== undefined) fields.name = this.flags.name;
    if (this.flags.solution !== undefined) fields.solution_id = this.flags.solution;
    const progress = new Progress(process.stderr, `${this.flags.preview ? 'reading' : 'importing'} ${basename(this.args.file)}`);
    const r = await uploadArchive(this.api, this.args.file, fields, this.flags.preview, progress);
    if (this.flags.json) return this.json(r);
    if (this.flags.preview) {
      const p = r as { format: string; version: number; intent: string; turns: number; files: number; total_bytes: number; warnings: string[] };
      this.log(`${p.format} v${p.version}: "${p.intent}", ${p.turns} turns, ${p.files} files, ${human(p.total_bytes)}`);
      for (const w of p.warnings) this.log(`warning: ${w}`);
      return;
    }
    const s = r as { session_id: string; intent: string; status: string };
    this.log(`imported as ${s.session_id} "${s.intent}" (${s.status})`);
  }
}
