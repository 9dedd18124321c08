import { Args, Flags } from '@oclif/core';
import { ClientError } from '../client/api.js';
import { ClientCommand } from '../client/command.js';
import { ChatClient } from '../client/interactive.js';

export default class Chat extends ClientCommand<typeof Chat> {
  static summary = 'Chat with the agent in a session (new one unless SESSION_ID is given)';
  static description =
    'Interactive by default: answers stream as they arrive, tool calls show on one line each, questions of the agent come as numbered menus. ' +
    'Ctrl-C stops the running answer; a second Ctrl-C exits. With -m it sends one message and exits 0 when the run completed, 1 otherwise; ' +
    'with --json it then prints the chat:end payload (interactive --json prints every event as one JSON line).';
  static examples = ['<%= config.bin %> chat', '<%= config.bin %> chat sess_abc', '<%= config.bin %> chat -m "list the files in the workspace"', '<%= config.bin %> chat sess_abc -m "and now?" --json'];
  static args = { session_id: Args.string({ description: 'session to continue (default: a new session)' }) };
  static flags = { message: Flags.string({ char: 'm', description: 'send one message, print the answer, exit' }) };

  async run(): Promise<void> {
    const json = this.flags.json;
    const oneShot = this.flags.message !== undefined;
    const client = new ChatClient({
      api: this.api,
      sessionId: this.args.session_id,
      out: process.stdout,
      err: process.stderr,
      input: process.stdin,
      // One-shot --json prints only chat:end; interactive --json prints every event.
      print: json ? (oneShot ? 'none' : 'json') : 'text',
      // The second Ctrl-C arrives in an event handler, where oclif's exit (a throw) cannot end the command.
      exit: (code) => process.exit(code),
    });
    const onSigint = () => client.interrupt();
    process.on('SIGINT', onSigint);
    try {
      const { created } = await client.open(!oneShot).catch((e) => {
        throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `session ${this.args.session_id} not found`) : e;
      });
      if (oneShot) {
        if (!json && created) this.logToStderr(`agentsvc: session ${client.chat.sessionId}`);
        const end = await client.oneShot(this.flags.message as string);
        if (json) this.json(end);
        else if (end.finish_reason === 'tool_question') this.logToStderr(`agentsvc: the agent asks a question; answer it with: agentsvc chat ${end.session_id}`);
        this.exit(end.status === 'completed' ? 0 : 1);
      }
      if (!json) client.renderer.line(client.renderer.s.gray(`session ${client.chat.sessionId}${created ? ' (new)' : ''} · Ctrl-C stops an answer, twice exits · /exit quits`));
      await client.repl();
    } finally {
      process.off('SIGINT', onSigint);
      client.close();
    }
  }
}
