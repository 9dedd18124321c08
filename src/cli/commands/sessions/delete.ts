import { Args } from '@oclif/core';
import { ClientError } from '../../terminal/api.js';
import { ClientCommand } from '../../terminal/command.js';
import { confirm, yesFlag } from '../../terminal/confirm.js';

export default class SessionsDelete extends ClientCommand<typeof SessionsDelete> {
  static summary = 'Delete a session, its turns and its workspace folder (asks first)';
  static examples = ['<%= config.bin %> sessions delete sess_abc', '<%= config.bin %> sessions delete sess_abc --yes --json'];
  static args = { id: Args.string({ description: 'session id', required: true }) };
  static flags = { yes: yesFlag };

  async run(): Promise<void> {
    const id = this.args.id;
    const notFound = (e: unknown) => {
      throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `session ${id} not found`) : e;
    };
    const session = await this.api.session(id).catch(notFound);
    if (!this.flags.yes && !(await confirm(`Delete session ${id} "${session.intent || '(no title)'}" (${session.status})?`).catch((e) => this.fail(e)))) {
      this.logToStderr('not deleted');
      this.exit(1);
    }
    const r = await this.api.deleteSession(id).catch(notFound);
    if (this.flags.json) return this.json(r);
    this.log(`deleted ${id}`);
  }
}
