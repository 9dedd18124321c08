import { defineModule } from '../../platform/lib/modules.js';
import { createTeamWorkspaces, type Teams } from './index.js';
import { IssueStore } from './issues.js';
import { readAccess } from './read-access.js';
import { TeamWorkspaceStore } from './store.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Team workspaces and their members (sessions check membership with it). */
    teamStore: { workspaces: TeamWorkspaceStore; issues: IssueStore };
    teams: Teams;
  }
}

export const teamStoreModule = defineModule({
  name: 'teamStore',
  needs: ['users'],
  start(ctx) {
    const issues = new IssueStore(ctx.db);
    const store = new TeamWorkspaceStore(ctx.db, ctx.get('users'), (ids) => issues.counts(ids));
    return {
      provides: { workspaces: store, issues },
      hooks: [
        { on: 'session.access', name: 'teams.members', run: ({ userId, workspaceId }) => store.isMember(workspaceId, userId) },
        // Every member reads the sessions of the team workspace's members, read-only (docs/identity.md).
        { on: 'session.readers', name: 'teams.readers', run: ({ userId, workspaceId }) => store.readers(workspaceId, userId) },
      ],
    };
  },
});

/**
 * Team workspaces and issues; an issue assigned to an agent starts a task run. A subscription ends
 * when its user may no longer read the session (read-access.ts).
 */
export const teamsModule = defineModule({
  name: 'teams',
  needs: ['teamStore', 'sessions', 'chat', 'engine', 'production', 'solutions', 'users'],
  start(ctx) {
    const { chat, runs, subs } = ctx.get('chat');
    const access = readAccess({ users: ctx.get('users'), subs, sessions: ctx.get('sessions'), logger: ctx.logger });
    const stopWatching = access.watch();
    const teams = createTeamWorkspaces({
      db: ctx.db,
      ...ctx.get('teamStore'),
      logger: ctx.logger,
      sessions: ctx.get('sessions'),
      runs,
      hooks: ctx.hooks,
      chat,
      conversation: ctx.get('engine').conversation,
      turns: ctx.get('engine').turns,
      prodAgents: ctx.get('production').prodAgents,
      catalog: ctx.get('solutions').catalog,
      accessShrank: access.shrank,
    });
    return {
      provides: teams,
      routes: teams.routes,
      hooks: [{ on: 'session.deleted', name: 'teams.read-access', run: ({ sessionId }) => access.deleted(sessionId) }],
      jobs: [{ name: 'task runs', start: () => teams.start(), stop: async () => teams.close() }],
      close: [{ phase: 'intake', name: 'read access checks', close: async () => stopWatching() }],
    };
  },
});
