import { ClientCommand } from '../../terminal/command.js';
import { confirm, yesFlag } from '../../terminal/confirm.js';
import { onWebhook, type WebhookView, webhookArg } from '../../webhooks.js';

export default class WebhooksDelete extends ClientCommand<typeof WebhooksDelete> {
  static summary = 'Delete a webhook, its waiting deliveries and its log (asks first)';
  static examples = ['<%= config.bin %> webhooks delete wh_abc', '<%= config.bin %> webhooks delete wh_abc --yes --json'];
  static args = webhookArg;
  static flags = { yes: yesFlag };

  async run(): Promise<void> {
    const { id } = this.args;
    const w = await onWebhook<WebhookView>(this.api, 'GET', id);
    if (!this.flags.yes && !(await confirm(`Delete webhook ${id} (${w.events.join(', ')} to ${w.url})?`).catch((e) => this.fail(e)))) {
      this.logToStderr('not deleted');
      this.exit(1);
    }
    await onWebhook(this.api, 'DELETE', id);
    if (this.flags.json) return this.json({ deleted: true, id });
    this.log(`deleted ${id}`);
  }
}
