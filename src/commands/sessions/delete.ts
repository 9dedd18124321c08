import { Args, Flags } from '@oclif/core';
import { createInterface } from 'node:readline/promises';
import { ClientError } from '../../client/api.js';
import { ClientCommand } from '../../client/command.js';

export default class SessionsDelete extends ClientCommand<typeof SessionsDelete> {
  static summary = 'Delete a session, its turns and its workspace folder (asks first)';
  static examples = ['<%= config.bin %> sessions delete sess_abc', '<%= config.bin %> sessions delete sess_abc --yes --json'];
  static args = { id: Args.string({ description: 'session id', required: true }) };
  static flags = { yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }) };

  async run(): Promise<void> {
    const id = this.args.id;
    const notFound = (e: unknown) => {
      throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `session ${id} not found`) : e;
    };
    const session = await this.api.session(id).catch(notFound);
    if (!this.flags.yes) {
      if (!process.stdin.isTTY) this.fail(new ClientError('invalid', 'not deleting without confirmation: stdin is not a terminal; pass --yes'));
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      const reply = await rl.question(`Delete session ${id} "${session.intent || '(no title)'}" (${session.status})? [y/N] `).catch(() => '');
      rl.close();
      if (!/^y(es)?$/i.test(reply.trim())) {
        this.logToStderr('not deleted');
        this.exit(1);
      }
    }
    const r = await this.api.deleteSession(id).catch(notFound);
    if (this.flags.json) return this.json(r);
    this.log(`deleted ${id}`);
  }
}
