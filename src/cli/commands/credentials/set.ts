import { Args, Flags } from '@oclif/core';
import { ClientCommand } from '../../terminal/command.js';

/** A line from a terminal without echo (the key is never shown), or all of stdin when piped. */
async function readSecret(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    let text = '';
    for await (const c of stdin) text += c;
    return text.trim();
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let line = '';
    const done = (fn: () => void) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      fn();
    };
    const onData = (b: Buffer) => {
      for (const ch of b.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done(() => resolve(line.trim()));
        if (ch === '\u0003') return done(() => reject(new Error('cancelled')));
        if (ch === '\u007f') line = line.slice(0, -1);
        else line += ch;
      }
    };
    stdin.on('data', onData);
  });
}

export default class CredentialsSet extends ClientCommand<typeof CredentialsSet> {
  static summary = 'Store your own API key for a model (read from the terminal without echo, or from stdin)';
  static description =
    'PUT /api/me/credentials/MODEL. The key is never taken as an argument (it would show in the process list and the shell history): it is typed at a prompt that does not echo, piped on stdin, or named by --from-env.';
  static examples = ['<%= config.bin %> credentials set gpt-4o', 'printf %s "$MY_OPENAI_KEY" | <%= config.bin %> credentials set gpt-4o', '<%= config.bin %> credentials set gpt-4o --from-env MY_OPENAI_KEY'];
  static args = { model: Args.string({ description: 'model id (an AGENTSVC_MODELS entry with "personal_key")', required: true }) };
  static flags = { 'from-env': Flags.string({ description: 'read the key from this environment variable' }) };

  async run(): Promise<void> {
    const from = this.flags['from-env'];
    const key = from ? (process.env[from] ?? '').trim() : await readSecret(`API key for ${this.args.model} (not shown): `).catch((e) => this.fail(e));
    if (!key) this.fail(new Error(from ? `environment variable ${from} is empty or not set` : 'no key given'));
    const c = await this.api.json<{ model_id: string; masked: string }>('PUT', `/api/me/credentials/${encodeURIComponent(this.args.model)}`, { api_key: key }).catch((e) => this.fail(e));
    if (this.flags.json) return this.json(c);
    this.log(`stored your key ${c.masked} for ${c.model_id} (encrypted; it is not shown again)`);
  }
}
