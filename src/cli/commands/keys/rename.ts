import { Args, Flags } from '@oclif/core';
import { KeysCommand } from '../../keys.js';

export default class KeysRename extends KeysCommand<typeof KeysRename> {
  static summary = 'Rename an API key';
  static examples = ['<%= config.bin %> keys rename key_abc --name laptop-2'];
  static args = { key_id: Args.string({ required: true, description: 'key id (key_...)' }) };
  static flags = { ...KeysCommand.flags, name: Flags.string({ required: true, description: 'new name, 1-50 characters' }) };

  async run(): Promise<void> {
    const users = await this.service();
    const key = await users.renameKey((await this.user(users)).id, this.args.key_id, this.flags.name).catch((e) => this.fail(e));
    this.print(key, `renamed ${key.id} to "${key.name}"`);
  }
}
