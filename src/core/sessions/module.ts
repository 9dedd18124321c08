import { defineModule } from '../../platform/lib/modules.js';
import { sessionRoutes } from './routes.js';
import { SessionService } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    sessions: SessionService;
  }
}

/** Sessions of a user: a role's plan at creation (session.plan), team workspaces for their members only (session.access), read by their members (session.readers). */
export const sessionsModule = defineModule({
  name: 'sessions',
  needs: ['folders', 'engine'],
  start(ctx) {
    const { config, hooks } = ctx;
    const folders = ctx.get('folders');
    const { turns } = ctx.get('engine');
    const sessions = new SessionService(ctx.db, {
      hooks: ctx.hooks,
      removeFolder: (userId, sessionId) => folders.removeSession(userId, sessionId),
      defaultModel: config.model.default,
      models: config.model.models,
      memoryEnabled: config.memoryEnabled,
      turnText: (ids, pattern, limit) => turns.sessionsWithText(ids, pattern, limit),
      // A role's plan (solutions) and team membership (teams): the hooks session.plan and session.access.
      plan: async (userId, input) => (await hooks.call('session.plan', { userId, input })) ?? null,
      teamWorkspaceAccess: async (userId, workspaceId) => (await hooks.call('session.access', { userId, workspaceId })) === true,
      // Who reads a team workspace's sessions (teams): the hook session.readers; no answer, nobody.
      teamWorkspaceReaders: async (userId, workspaceId) => (await hooks.call('session.readers', { userId, workspaceId })) ?? null,
    });
    return { provides: sessions, routes: [{ plugin: sessionRoutes, opts: { config, sessions } }] };
  },
});
