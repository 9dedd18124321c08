import type { Turn } from '../../core/conversation/turns.js';
import type { TurnStore } from '../../core/conversation/turn-store.js';
import type { Hooks } from '../../core/engine/hooks.js';
import type { Runs } from '../../core/engine/runs.js';
import type { Database } from '../../platform/db/index.js';
import type { Logger } from '../../platform/lib/logger.js';
import { getProdAgent, type ProdAgents } from '../production/agents/service.js';
import type { RouteModule } from '../../platform/server/app.js';
import type { SolutionCatalog } from '../solutions/catalog.js';
import { issueRoutes } from './issue-routes.js';
import type { IssueStore } from './issues.js';
import { teamWorkspaceRoutes } from './routes.js';
import { type SessionsPort, TeamWorkspaceService } from './service.js';
import type { TeamWorkspaceStore } from './store.js';
import { type AgentPort, IssueTaskRuns } from './issue-task-runs.js';

export interface TeamWorkspacesDeps {
  db: Database;
  /** The workspaces' store (sessions check membership with it too). */
  workspaces: TeamWorkspaceStore;
  issues: IssueStore;
  logger: Logger;
  sessions: SessionsPort;
  runs: Pick<Runs, 'start' | 'onEnded'>;
  hooks: Pick<Hooks, 'on'>;
  chat: { stop(userId: string, sessionId: string): Promise<unknown> };
  conversation: { turns(sessionId: string): Promise<Turn[]> };
  turns: Pick<TurnStore, 'usageOf'>;
  prodAgents: ProdAgents;
  catalog: SolutionCatalog;
  /** These users may read less than before: their subscriptions are checked again on every node (read-access.ts). */
  accessShrank(userIds: string[]): Promise<void>;
}

/** The agents of a workspace are production agents (docs/solutions-and-admin.md): this adapter is the port's only tie to them. */
export function prodAgentPort(db: Database, prodAgents: ProdAgents): AgentPort {
  return {
    owned: async (userId, agentId) => {
      const a = await getProdAgent(db, userId, agentId);
      return a && { id: a.record_id, name: a.name };
    },
    record: async (agentId) => {
      const a = await getProdAgent(db, null, agentId);
      if (!a) return null;
      const { user_id: _owner, init_script: _script, ...rest } = a;
      return rest;
    },
    startSession: async (ownerId, agentId, opts) => (await prodAgents.startSession(ownerId, agentId, opts)).session_id,
  };
}

export type Teams = ReturnType<typeof createTeamWorkspaces>;

/** Workspaces and issues, wired: routes for the app, start once the service listens, close on shutdown. */
export function createTeamWorkspaces(d: TeamWorkspacesDeps) {
  const store = d.workspaces;
  const issues = d.issues;
  const agents = prodAgentPort(d.db, d.prodAgents);
  const stillThere = async (workspaceId: string, agentId: string) => (await store.agent(workspaceId, agentId)) != null;
  const runs = new IssueTaskRuns({ db: d.db, issues, agents, runs: d.runs, hooks: d.hooks, chat: d.chat, stillThere, conversation: d.conversation, turns: d.turns, sessions: d.sessions, logger: d.logger });
  const service = new TeamWorkspaceService({
    store,
    issues,
    runs,
    agents,
    sessions: d.sessions,
    solutionOfRole: (roleId) => d.catalog.list().find((s) => s.roles.some((r) => r.id === roleId))?.id ?? null,
    accessShrank: d.accessShrank,
  });
  const routes: RouteModule[] = [
    { plugin: teamWorkspaceRoutes, opts: { service } },
    { plugin: issueRoutes, opts: { service } },
  ];
  return { service, runs, routes, start: () => runs.start(), close: async () => runs.close() };
}
