import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { KeysCommand } from '../../keys.js';
import { confirm, yesFlag } from '../../terminal/confirm.js';

export default class KeysDelete extends KeysCommand<typeof KeysDelete> {
  static summary = 'Delete an API key; sockets using it are disconnected (asks first)';
  static description = 'The key in AGENTSVC_HOME/admin.key, which chat, sessions and doctor use, is deleted only with --force.';
  static examples = ['<%= config.bin %> keys delete key_abc', '<%= config.bin %> keys delete key_abc --yes --json'];
  static args = { key_id: Args.string({ required: true, description: 'key id (key_...)' }) };
  static flags = { ...KeysCommand.flags, force: Flags.boolean({ description: 'delete it even when it is the key in AGENTSVC_HOME/admin.key' }), yes: yesFlag };

  async run(): Promise<void> {
    const users = await this.service();
    const user = await this.user(users);
    const keyFile = join(this.cfg.home, 'admin.key');
    let plaintext: string | undefined;
    try {
      plaintext = readFileSync(keyFile, 'utf8').trim();
    } catch {
      // no admin.key: nothing the CLI depends on
    }
    const cliKey = (await users.authenticate(plaintext))?.keyId === this.args.key_id;
    const recover = `make another with: agentsvc keys create --name cli | head -1 > ${keyFile}`;
    if (cliKey && !this.flags.force)
      this.fail(new Error(`${this.args.key_id} is the key in ${keyFile}, which chat, sessions and doctor use; pass --force to delete it anyway, then ${recover}`));
    const key = (await users.listKeys(user.id)).find((k) => k.id === this.args.key_id);
    // An unknown key: deleteKey says so, as before.
    if (key && !this.flags.yes && !(await confirm(`Delete key ${key.id} "${key.name}" of ${user.username}? Clients using it are cut off.`).catch((e) => this.fail(e)))) {
      this.logToStderr('not deleted');
      this.exit(1);
    }
    await users.deleteKey(user.id, this.args.key_id).catch((e) => this.fail(e));
    if (cliKey) this.logToStderr(`agentsvc: warning: ${keyFile} now holds a deleted key; ${recover}`);
    this.print({ deleted: true, id: this.args.key_id }, `deleted ${this.args.key_id}`);
  }
}
