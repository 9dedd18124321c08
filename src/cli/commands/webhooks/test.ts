import { ClientCommand } from '../../terminal/command.js';
import { type AttemptView, onWebhook, webhookArg } from '../../webhooks.js';

export default class WebhooksTest extends ClientCommand<typeof WebhooksTest> {
  static summary = 'Send one signed webhook.test delivery now (not retried); exit 1 when it failed';
  static examples = ['<%= config.bin %> webhooks test wh_abc', '<%= config.bin %> webhooks test wh_abc --json'];
  static args = webhookArg;

  async run(): Promise<void> {
    const a = await onWebhook<AttemptView>(this.api, 'POST', this.args.id, '/test');
    if (this.flags.json) this.json(a);
    else if (a.status === 'delivered') this.log(`delivered: HTTP ${a.response_status} (${a.delivery_id})`);
    if (a.status !== 'delivered') this.fail(new Error(`the test delivery failed: ${a.error ?? `HTTP ${a.response_status}`}`));
  }
}
