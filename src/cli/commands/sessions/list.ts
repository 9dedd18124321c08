import { Flags } from '@oclif/core';
import { ClientCommand } from '../../terminal/command.js';
import { sessionTable } from '../../terminal/tables.js';

export default class SessionsList extends ClientCommand<typeof SessionsList> {
  static summary = 'List your sessions, most recent first';
  static examples = ['<%= config.bin %> sessions list', '<%= config.bin %> sessions list --q invoice --limit 50 --json'];
  static flags = {
    q: Flags.string({ description: 'only sessions whose title or content matches' }),
    limit: Flags.integer({ description: 'how many (1-100)', default: 20, min: 1, max: 100 }),
    offset: Flags.integer({ description: 'skip this many', default: 0, min: 0 }),
  };

  async run(): Promise<void> {
    const page = await this.api.listSessions({ q: this.flags.q, limit: this.flags.limit, offset: this.flags.offset });
    if (this.flags.json) return this.json(page);
    const out = sessionTable(page.items, process.stdout.columns ?? 120);
    this.log(out || 'no sessions');
    if (page.total > page.offset + page.items.length) this.log(`(${page.items.length} of ${page.total}; --offset ${page.offset + page.items.length} for more)`);
  }
}
