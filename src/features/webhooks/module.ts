import { defineModule } from '../../platform/lib/modules.js';
import { webhookRoutes } from './routes.js';
import { Webhooks } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Webhooks: signed, durable deliveries of run events (docs/webhooks.md). */
    webhooks: Webhooks;
  }
}

export const webhooksModule = defineModule({
  name: 'webhooks',
  needs: ['scheduling', 'engine', 'events', 'solutions', 'sessions', 'telemetry'],
  start(ctx) {
    const { admin } = ctx.get('solutions');
    const { metrics } = ctx.get('telemetry');
    const webhooks = new Webhooks({
      db: ctx.db,
      sessions: ctx.get('sessions'),
      delayed: ctx.get('scheduling').delayed,
      conversation: ctx.get('engine').conversation,
      logger: ctx.logger,
      isAdmin: (u) => admin.isAdmin(u),
      allowPrivate: ctx.config.webhooks.allowPrivate,
      retryBaseMs: ctx.config.webhooks.retryBaseMs,
      bus: ctx.get('events').log.bus,
      onAttempt: (event, outcome) => metrics.webhookDelivery(event, outcome),
    });
    return {
      provides: webhooks,
      hooks: [
        { on: 'run.ended', name: 'webhooks.runs', run: (e) => webhooks.onRunEnded(e) },
        { on: 'budget.warning', name: 'webhooks.budgets', run: (e) => webhooks.onBudgetWarning(e) },
      ],
      routes: [{ plugin: webhookRoutes, opts: { webhooks } }],
      jobs: [{ name: 'webhooks', start: () => webhooks.start(), stop: async () => webhooks.close() }],
    };
  },
});
