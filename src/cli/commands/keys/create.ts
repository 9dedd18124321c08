import { Flags } from '@oclif/core';
import { KeysCommand } from '../../keys.js';

export default class KeysCreate extends KeysCommand<typeof KeysCreate> {
  static summary = 'Create an API key (and the user, if missing); prints the key once';
  static examples = ['<%= config.bin %> keys create --name laptop', '<%= config.bin %> keys create --user alice --name ci --json'];
  static flags = { ...KeysCommand.flags, name: Flags.string({ description: 'key name, 1-50 characters', required: true }) };

  async run(): Promise<void> {
    const users = await this.service();
    const user = await this.user(users, true);
    const created = await users.createKey(user.id, this.flags.name).catch((e) => this.fail(e));
    this.print(created, `${created.plaintext}\n(key ${created.key.id} "${created.key.name}" for ${user.username}; it is shown only once)`);
  }
}
