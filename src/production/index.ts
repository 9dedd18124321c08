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
import { prodAgentRoutes } from './agents/routes.js';
import { ProdAgents } from './agents/service.js';

export interface BusinessDeps {
  config: Config;
  db: Database;
  runner: Runner;
  workspaces: Workspaces;
  sessions: SessionService;
  tools: ToolRegistry;
  prompt: SystemPrompt;
}

export interface Business {
  catalog: SolutionCatalog;
  roles: Roles;
  prodAgents: ProdAgents;
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
  const prodAgents = new ProdAgents({ db, config, catalog, roles, sessions: deps.sessions, runner: deps.runner });
  const sql = <T>(q: string, p: unknown[]) => db.em().getConnection().execute<T[]>(q, p);
  const isAdmin = async (userId: string) => (await sql<{ is_admin: boolean }>('select is_admin from users where id = ?', [userId]))[0]?.is_admin === true;
  const userExists = async (userId: string) => (await sql<{ id: string }>('select id from users where id = ?', [userId])).length > 0;
  return {
    catalog,
    roles,
    prodAgents,
    warnings: [...catalog.problems],
    routes: [
      { plugin: solutionRoutes, opts: { catalog, access: () => roles.access, isAdmin, userExists } },
      { plugin: prodAgentRoutes, opts: { agents: prodAgents } },
    ],
  };
}
