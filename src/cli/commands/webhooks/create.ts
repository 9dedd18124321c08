import { Args, Flags } from '@oclif/core';
import { ClientCommand } from '../../terminal/command.js';
import type { WebhookView } from '../../webhooks.js';

export default class WebhooksCreate extends ClientCommand<typeof WebhooksCreate> {
  static summary = 'Register a webhook; prints its signing secret once';
  static description =
    'Events: run.completed, run.failed, run.waiting, budget.warning, budget.exceeded, scheduled_task.failed (docs/webhooks.md). The secret (whsec_...) verifies each delivery with the standardwebhooks library; it is not shown again.';
  static examples = [
    '<%= config.bin %> webhooks create https://relay.example.com/hook --event run.waiting --event run.failed',
    '<%= config.bin %> webhooks create https://ops.example.com/hook --event budget.warning,budget.exceeded --scope install --json',
  ];
  // An argument: --url is the service's address, as in every client command.
  static args = { url: Args.string({ description: 'where deliveries are POSTed (http or https)', required: true }) };
  static flags = {
    event: Flags.string({ description: 'an event to send (repeat the flag, or separate with commas)', required: true, multiple: true }),
    description: Flags.string({ description: 'a note for people' }),
    scope: Flags.string({ description: 'user: your sessions; install: every session (admins only)', options: ['user', 'install'], default: 'user' }),
  };

  async run(): Promise<void> {
    const events = this.flags.event.flatMap((e) => e.split(',')).map((e) => e.trim()).filter(Boolean);
    const body = { url: this.args.url, events, scope: this.flags.scope, ...(this.flags.description === undefined ? {} : { description: this.flags.description }) };
    const w = await this.api.json<WebhookView>('POST', '/api/webhooks', body);
    if (this.flags.json) return this.json(w);
    this.log(w.secret);
    this.log(`(webhook ${w.id} for ${w.events.join(', ')} to ${w.url}; the secret above signs its deliveries and is shown only once)`);
  }
}
