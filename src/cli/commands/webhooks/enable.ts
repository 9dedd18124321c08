import { ClientCommand } from '../../terminal/command.js';
import { onWebhook, type WebhookView, webhookArg, webhookState } from '../../webhooks.js';

export default class WebhooksEnable extends ClientCommand<typeof WebhooksEnable> {
  static summary = 'Enable a webhook again (also one disabled after a day of failures): its waiting deliveries go on';
  static examples = ['<%= config.bin %> webhooks enable wh_abc'];
  static args = webhookArg;

  async run(): Promise<void> {
    const w = await onWebhook<WebhookView>(this.api, 'PATCH', this.args.id, '', { enabled: true });
    if (this.flags.json) return this.json(w);
    this.log(`${w.id}: ${webhookState(w)}`);
  }
}
