import { ClientCommand } from '../../terminal/command.js';
import { type WebhookView, webhookTable } from '../../webhooks.js';

export default class WebhooksList extends ClientCommand<typeof WebhooksList> {
  static summary = 'List your webhooks (and, for an admin, the install-wide ones), with their state';
  static examples = ['<%= config.bin %> webhooks list', '<%= config.bin %> webhooks list --json'];

  async run(): Promise<void> {
    const { items } = await this.api.json<{ items: WebhookView[] }>('GET', '/api/webhooks');
    if (this.flags.json) return this.json(items);
    this.log(items.length ? webhookTable(items) : 'no webhooks');
  }
}
