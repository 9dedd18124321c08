import { Args } from '@oclif/core';
import { KeysCommand } from '../../cli/keys.js';

export default class KeysDelete extends KeysCommand<typeof KeysDelete> {
  static summary = 'Delete an API key; sockets using it are disconnected';
  static examples = ['<%= config.bin %> keys delete key_abc'];
  static args = { key_id: Args.string({ required: true, description: 'key id (key_...)' }) };
  static flags = { ...KeysCommand.flags };

  async run(): Promise<void> {
    const users = await this.service();
    await users.deleteKey((await this.user(users)).id, this.args.key_id).catch((e) => this.fail(e));
    this.print({ deleted: true, id: this.args.key_id }, `deleted ${this.args.key_id}`);
  }
}
