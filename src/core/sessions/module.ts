import { defineModule } from '../../platform/lib/modules.js';
import { sessionRoutes } from './routes.js';
import { SessionService } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    sessions: SessionService;
  }
}

/** Sessions of a user (CONTRACT 4): a role's plan at creation, team workspaces for their members only. */
export const sessionsModule = defineModule({
  name: 'sessions',
  needs: ['folders', 'solutions', 'teamStore'],
  start(ctx) {
    const { config } = ctx;
    const { roles } = ctx.get('solutions');
    const teams = ctx.get('teamStore');
    const folders = ctx.get('folders');
    const sessions = new SessionService(ctx.db.em, {
      hooks: ctx.hooks,
      removeFolder: (userId, sessionId) => folders.removeSession(userId, sessionId),
      defaultModel: config.model.default,
      models: config.model.models,
      memoryEnabled: config.memoryEnabled,
      plan: (userId, input) => roles.plan(userId, input),
      workspaceAccess: (userId, workspaceId) => teams.isMember(workspaceId, userId),
    });
    return { provides: sessions, routes: [{ plugin: sessionRoutes, opts: { config, sessions } }] };
  },
});
