import type { SystemPrompt } from '../chat/system-prompt.js';
import type { Config } from '../config/index.js';
import type { Database } from '../db/index.js';
import type { Workspaces } from '../files/workspace.js';
import type { Runner } from '../../runners/types.js';
import type { RouteModule } from '../server/app.js';
import type { SessionService } from '../sessions/service.js';
import { SolutionCatalog } from '../solutions/catalog.js';
import { Roles } from '../solutions/roles.js';
import { solutionRoutes } from '../solutions/routes.js';
import type { ToolRegistry } from '../tools/registry.js';
import { adminRoutes } from '../admin/routes.js';
import { Admin } from '../admin/service.js';
import type { UserService } from '../users/service.js';
import { prodAgentRoutes } from './agents/routes.js';
import { prodUserRoutes } from './users/routes.js';
import { ProdUsers } from './users/service.js';
import { SolutionAgents } from './solution-agents/service.js';
import { Documents } from './solutions/documents.js';
import { ProdSolutions } from './solutions/records.js';
import { prodSolutionRoutes } from './solutions/routes.js';
import { ProdAgents } from './agents/service.js';

export interface BusinessDeps {
  config: Config;
  db: Database;
  runner: Runner;
  workspaces: Workspaces;
  sessions: SessionService;
  tools: ToolRegistry;
  prompt: SystemPrompt;
  users: UserService;
}

export interface Business {
  catalog: SolutionCatalog;
  roles: Roles;
  admin: Admin;
  prodAgents: ProdAgents;
  prodSolutions: ProdSolutions;
  routes: RouteModule[];
  /** Solutions that failed validation, one line each (shown by `up`). */
  warnings: string[];
}

/**
 * The business layer (CONTRACT 13), wired: the solutions catalogue and roles in sessions, admins
 * and role grants, production agents, production solutions and users.
 */
export function createBusiness(deps: BusinessDeps): Business {
  const { config, db } = deps;
  const catalog = SolutionCatalog.load(SolutionCatalog.roots(config.home, config.plugins));
  const roles = new Roles({ catalog, db, workspaces: deps.workspaces });
  deps.sessions.beforeCreate = (userId, input) => roles.plan(userId, input);
  deps.tools.addFilter(roles.filter);
  deps.prompt.add(roles.prompt);
  const admin = new Admin(db, catalog);
  roles.access = admin;
  const solutionAgents = new SolutionAgents(db, config);
  const prodAgents = new ProdAgents({ db, config, catalog, roles, sessions: deps.sessions, runner: deps.runner, agentIds: (userId) => solutionAgents.ids(userId) });
  const prodSolutions = new ProdSolutions(db, deps.sessions);
  const documents = new Documents(
    db,
    (userId, id) => prodSolutions.get(userId, id),
    async (userId) => {
      const agentIds = await solutionAgents.ids(userId);
      return {
        roleExists: (roleId, solutionId) => catalog.list().some((s) => (solutionId == null || s.id === solutionId) && s.roles.some((r) => r.id === roleId)),
        agentExists: (agentId) => agentIds.has(agentId),
      };
    },
  );
  prodSolutions.documents = documents;
  return {
    catalog,
    roles,
    admin,
    prodAgents,
    prodSolutions,
    warnings: [...catalog.problems],
    routes: [
      { plugin: solutionRoutes, opts: { catalog, access: () => roles.access, isAdmin: (u: string) => admin.isAdmin(u), userExists: (u: string) => admin.userExists(u) } },
      { plugin: adminRoutes, opts: { admin } },
      { plugin: prodUserRoutes, opts: { prodUsers: new ProdUsers(db, deps.users), isAdmin: (u: string) => admin.isAdmin(u) } },
      { plugin: prodAgentRoutes, opts: { agents: prodAgents } },
      { plugin: prodSolutionRoutes, opts: { records: prodSolutions, documents, agents: solutionAgents } },
    ],
  };
}
