import { Flags } from '@oclif/core';
import { ClientCommand } from '../terminal/command.js';
import { styleFor } from '../terminal/style.js';
import { fetchUsage, usageTable } from '../terminal/usage.js';

export default class Usage extends ClientCommand<typeof Usage> {
  static summary = 'Model usage and cost, by day, model, session or user (admins)';
  static description =
    'Reads GET /api/usage: your model calls (an admin with --by user: everyone\'s) with their tokens and cost, one row per group with a bar, and a total. Days follow the service\'s AGENTSVC_TIMEZONE.';
  static examples = ['<%= config.bin %> usage', '<%= config.bin %> usage --by model --from 2026-11-01', '<%= config.bin %> usage --by user --json'];
  static flags = {
    from: Flags.string({ description: 'first day (YYYY-MM-DD) or instant (ISO 8601)' }),
    to: Flags.string({ description: 'last day (YYYY-MM-DD, included) or instant (ISO 8601, excluded)' }),
    by: Flags.string({ description: 'one row per (credential: your own key or the install\'s)', options: ['day', 'model', 'session', 'user', 'credential'], default: 'day' }),
  };

  async run(): Promise<void> {
    const report = await fetchUsage(this.api, { from: this.flags.from, to: this.flags.to, by: this.flags.by });
    if (this.flags.json) return this.json(report);
    this.log(usageTable(report, this.flags.by, process.stdout.columns ?? 100, styleFor(process.stdout)) || 'no model calls in this range');
  }
}
