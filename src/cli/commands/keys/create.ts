import { Flags } from '@oclif/core';
import { KeysCommand } from '../../keys.js';

export default class KeysCreate extends KeysCommand<typeof KeysCreate> {
  static summary = 'Create an API key; prints the key once (--create-user also makes a missing user)';
  static examples = ['<%= config.bin %> keys create --name laptop', '<%= config.bin %> keys create --user alice --create-user --name ci --json'];
  static flags = {
    ...KeysCommand.flags,
    name: Flags.string({ description: 'key name, 1-50 characters', required: true }),
    'create-user': Flags.boolean({ description: 'make --user when it does not exist yet (without it, a mistyped name is refused)' }),
  };

  async run(): Promise<void> {
    const users = await this.service();
    // The install's own admin is made on demand, as `up` would; anyone else only when asked, so a typo
    // (`--user alcie`) is refused instead of becoming a user.
    const user = await this.user(users, this.flags['create-user'] || this.flags.user === 'admin');
    const created = await users.createKey(user.id, this.flags.name).catch((e) => this.fail(e));
    this.print(created, `${created.plaintext}\n(key ${created.key.id} "${created.key.name}" for ${user.username}; it is shown only once)`);
  }
}
