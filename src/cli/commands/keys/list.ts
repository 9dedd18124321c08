import { KeysCommand } from '../../keys.js';
import { table } from '../../terminal/tables.js';

export default class KeysList extends KeysCommand<typeof KeysList> {
  static summary = "List a user's API keys";
  static examples = ['<%= config.bin %> keys list --user alice --json'];
  static flags = { ...KeysCommand.flags };

  async run(): Promise<void> {
    const users = await this.service();
    const keys = await users.listKeys((await this.user(users)).id);
    const when = (iso: string | null) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 16) : 'never');
    const rows = keys.map((k) => [k.id, k.masked, when(k.created_at), when(k.last_used_at), k.name]);
    this.print(keys, rows.length ? table(['ID', 'KEY', 'CREATED (UTC)', 'LAST USED (UTC)', 'NAME'], rows) : 'no keys');
  }
}
