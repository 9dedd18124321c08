import { Args } from '@oclif/core';
import { ClientError } from '../../terminal/api.js';
import { ClientCommand } from '../../terminal/command.js';
import { Renderer } from '../../terminal/render.js';

export default class SessionsShow extends ClientCommand<typeof SessionsShow> {
  static summary = 'Show a conversation, rendered as `agentsvc chat` shows it (--json: {session, messages})';
  static examples = ['<%= config.bin %> sessions show sess_abc', '<%= config.bin %> sessions show sess_abc --json'];
  static args = { id: Args.string({ description: 'session id', required: true }) };

  async run(): Promise<void> {
    const id = this.args.id;
    const [session, turns] = await Promise.all([this.api.session(id), this.api.messages(id)]).catch((e) => {
      throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `session ${id} not found`) : e;
    });
    if (this.flags.json) return this.json({ session, messages: turns });
    const r = new Renderer(process.stdout, { showUserTurns: true });
    this.log(r.s.gray(`${session.id}  ${session.status}  ${session.intent || '(no title)'}`));
    r.turns(turns);
    r.newline();
  }
}
