import { Flags } from '@oclif/core';
import { type AuditItem, auditTable } from '../terminal/audit.js';
import { ClientCommand } from '../terminal/command.js';

export default class Audit extends ClientCommand<typeof Audit> {
  static summary = 'Tool policy decisions (allowed, denied, asked, approved, rejected), newest first';
  static description = 'Reads GET /api/audit: your own records; an admin reads everyone\'s and may pick a user with --user.';
  static examples = ['<%= config.bin %> audit', '<%= config.bin %> audit --session sess_abc --action denied', '<%= config.bin %> audit --from 2026-11-01T00:00:00Z --json'];
  static flags = {
    session: Flags.string({ description: 'only this session' }),
    user: Flags.string({ description: 'only this user (admins)' }),
    action: Flags.string({ description: 'only this action', options: ['allowed', 'denied', 'asked', 'approved', 'rejected', 'credential_set'] }),
    from: Flags.string({ description: 'from this ISO time' }),
    to: Flags.string({ description: 'up to this ISO time' }),
    limit: Flags.integer({ description: 'how many (1-1000)', default: 50, min: 1, max: 1000 }),
    offset: Flags.integer({ description: 'skip this many', default: 0, min: 0 }),
  };

  async run(): Promise<void> {
    const f = this.flags;
    const q = new URLSearchParams({ limit: String(f.limit), offset: String(f.offset) });
    for (const [k, v] of [['session_id', f.session], ['user_id', f.user], ['action', f.action], ['from', f.from], ['to', f.to]] as const) if (v) q.set(k, v);
    const page = await this.api.json<{ items: AuditItem[]; total: number }>('GET', `/api/audit?${q}`);
    if (f.json) return this.json(page);
    this.log(auditTable(page.items, process.stdout.columns ?? 160) || 'no policy decisions');
    if (page.total > f.offset + page.items.length) this.log(`(${page.items.length} of ${page.total}; --offset ${f.offset + page.items.length} for more)`);
  }
}
