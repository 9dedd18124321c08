import { defineModule } from '../../platform/lib/modules.js';
import { Subscriptions } from '../../core/events/subscriptions.js';
import { DoorRuns } from './follow.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    doors: DoorRuns;
  }
}

/**
 * What the protocol doors (the MCP server, AG-UI) share: starting a run for their user and following
 * its events as a subscribed socket would (docs/protocol-doors.md). The doors themselves are the
 * `mcp-door` and `ag-ui` modules.
 */
export const doorsModule = defineModule({
  name: 'doors',
  needs: ['chat', 'events', 'engine', 'sessions'],
  start(ctx) {
    const events = ctx.get('events');
    const { conversation } = ctx.get('engine');
    const { chat, runs } = ctx.get('chat');
    const subs = new Subscriptions(
      events.log.bus,
      (sessionId, after, limit) => events.store.page(sessionId, after, limit),
      (sessionId) => conversation.turns(sessionId),
    );
    return {
      provides: new DoorRuns({ runs, chat, sessions: ctx.get('sessions'), log: events.log, subs }),
      close: [{ phase: 'infrastructure', name: 'door subscriptions', close: async () => subs.close() }],
    };
  },
});
