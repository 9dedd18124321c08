import { KeysCommand } from '../../cli/keys.js';

export default class KeysList extends KeysCommand<typeof KeysList> {
  static summary = "List a user's API keys";
  static examples = ['<%= config.bin %> keys list --user alice --json'];
  static flags = { ...KeysCommand.flags };

  async run(): Promise<void> {
    const users = await this.service();
    const keys = await users.listKeys((await this.user(users)).id);
    const rows = keys.map((k) => `${k.id}  ${k.masked}  ${k.name}  created ${k.created_at}  last used ${k.last_used_at ?? 'never'}`);
    this.print(keys, rows.join('\n') || 'no keys');
  }
}
