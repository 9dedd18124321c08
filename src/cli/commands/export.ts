import { access } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { ClientError } from '../terminal/api.js';
import { ClientCommand } from '../terminal/command.js';
import { human, Progress } from '../terminal/progress.js';
import { downloadExport } from '../terminal/transfer.js';

export default class Export extends ClientCommand<typeof Export> {
  static summary = 'Export a session (turns of every branch, checkpoints, tasks, memories, workspace files) as a ZIP';
  static description = 'Streams GET /api/sessions/{id}/export to a file. A progress line shows on a terminal, nothing when piped. The file is written only when complete.';
  static examples = ['<%= config.bin %> export sess_abc', '<%= config.bin %> export sess_abc -o backup.zip --json', '<%= config.bin %> export sess_abc -o - > backup.zip'];
  static args = { id: Args.string({ description: 'session id', required: true }) };
  static flags = {
    output: Flags.string({ char: 'o', description: 'file to write (default <SESSION_ID>.zip; "-" for stdout)' }),
    force: Flags.boolean({ char: 'f', description: 'overwrite the file when it exists' }),
  };

  async run(): Promise<void> {
    const id = this.args.id;
    const file = this.flags.output ?? `${id}.zip`;
    if (file !== '-' && !this.flags.force && (await access(file).then(() => true, () => false))) {
      this.fail(new ClientError('invalid', `${file} exists; pass --force to overwrite, or -o another file`));
    }
    if (file === '-' && this.flags.json) this.fail(new ClientError('invalid', '--json and -o - both write to stdout; pick one'));
    const progress = new Progress(process.stderr, `exporting ${id}`);
    const r = await downloadExport(this.api, id, file, progress).catch((e) => {
      throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `session ${id} not found`) : e;
    });
    if (this.flags.json) return this.json(r);
    if (file !== '-') this.log(`exported ${id} to ${file}: ${r.entries} entries, ${human(r.bytes)} (${human(r.unpacked_bytes)} unpacked)`);
  }
}
