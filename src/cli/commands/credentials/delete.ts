import { Args } from '@oclif/core';
import { ClientCommand } from '../../terminal/command.js';

export default class CredentialsDelete extends ClientCommand<typeof CredentialsDelete> {
  static summary = 'Delete your own API key for a model (its calls go back to the install key, or are refused if it requires yours)';
  static examples = ['<%= config.bin %> credentials delete gpt-4o'];
  static args = { model: Args.string({ description: 'model id', required: true }) };

  async run(): Promise<void> {
    await this.api.json('DELETE', `/api/me/credentials/${encodeURIComponent(this.args.model)}`).catch((e) => this.fail(e));
    if (this.flags.json) return this.json({ model_id: this.args.model, deleted: true });
    this.log(`deleted your key for ${this.args.model}`);
  }
}
