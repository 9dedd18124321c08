import { defineModule } from '../../platform/lib/modules.js';
import { inboxRoutes } from './routes.js';
import { Inbox } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** What waits on a person, and the approval timeouts (docs/inbox.md). */
    inbox: Inbox;
  }
}

export const inboxModule = defineModule({
  name: 'inbox',
  needs: ['policy', 'scheduling', 'chat', 'engine', 'sessions'],
  start(ctx) {
    const inbox = new Inbox({
      db: ctx.db,
      conversation: ctx.get('engine').conversation,
      runs: ctx.get('chat').runs,
      policy: ctx.get('policy'),
      audit: ctx.get('policy').audit,
      sessions: ctx.get('sessions'),
      delayed: ctx.get('scheduling').delayed,
      logger: ctx.logger,
    });
    return { provides: inbox, routes: [{ plugin: inboxRoutes, opts: { inbox } }] };
  },
});
