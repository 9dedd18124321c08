import { ClientCommand } from '../../terminal/command.js';
import { onWebhook, type WebhookView, webhookArg, webhookState } from '../../webhooks.js';

export default class WebhooksDisable extends ClientCommand<typeof WebhooksDisable> {
  static summary = 'Disable a webhook: nothing is sent; its waiting deliveries wait';
  static examples = ['<%= config.bin %> webhooks disable wh_abc'];
  static args = webhookArg;

  async run(): Promise<void> {
    const w = await onWebhook<WebhookView>(this.api, 'PATCH', this.args.id, '', { enabled: false });
    if (this.flags.json) return this.json(w);
    this.log(`${w.id}: ${webhookState(w)}`);
  }
}
