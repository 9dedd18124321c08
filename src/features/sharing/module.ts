import { defineModule } from '../../platform/lib/modules.js';
import { sharingRoutes } from './routes.js';
import { ShareLinkStore } from './store.js';

/** Shared sessions and share links; links go when sharing is turned off. */
export const sharingModule = defineModule({
  name: 'sharing',
  needs: ['engine', 'sessions', 'settings'],
  start(ctx) {
    const links = new ShareLinkStore(ctx.db);
    return {
      hooks: [{ on: 'session.unshared', name: 'sharing.links', run: ({ sessionId }) => links.revokeAll(sessionId) }],
      routes: [{ plugin: sharingRoutes, opts: { config: ctx.config, db: ctx.db, links, buckets: ctx.get('settings'), turns: ctx.get('engine').turns, sessions: ctx.get('sessions') } }],
    };
  },
});
