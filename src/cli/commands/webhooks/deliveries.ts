import { Flags } from '@oclif/core';
import { ClientCommand } from '../../terminal/command.js';
import { type AttemptView, attemptTable, onWebhook, webhookArg } from '../../webhooks.js';

export default class WebhooksDeliveries extends ClientCommand<typeof WebhooksDeliveries> {
  static summary = "A webhook's delivery log: each attempt, newest first";
  static examples = ['<%= config.bin %> webhooks deliveries wh_abc', '<%= config.bin %> webhooks deliveries wh_abc --limit 100 --json'];
  static args = webhookArg;
  static flags = {
    limit: Flags.integer({ description: 'how many (1-500)', default: 20, min: 1, max: 500 }),
    offset: Flags.integer({ description: 'skip this many', default: 0, min: 0 }),
  };

  async run(): Promise<void> {
    const page = await onWebhook<{ items: AttemptView[]; total: number }>(this.api, 'GET', this.args.id, `/deliveries?limit=${this.flags.limit}&offset=${this.flags.offset}`);
    if (this.flags.json) return this.json(page);
    this.log(page.items.length ? attemptTable(page.items) : 'no deliveries');
    if (page.total > this.flags.offset + page.items.length) this.log(`(${page.items.length} of ${page.total}; --offset ${this.flags.offset + page.items.length} for more)`);
  }
}
