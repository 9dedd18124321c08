import { defineModule } from '../../platform/lib/modules.js';
import { prodAgentRoutes } from './agents/routes.js';
import { scriptCheck } from './agents/script-policy.js';
import { ProdAgents } from './agents/service.js';
import { SolutionAgents } from './solution-agents/service.js';
import { Documents } from './solutions/documents.js';
import { ProdSolutions } from './solutions/records.js';
import { prodSolutionRoutes } from './solutions/routes.js';
import { prodUserRoutes } from './users/routes.js';
import { ProdUsers } from './users/service.js';

export interface Production {
  prodAgents: ProdAgents;
  prodSolutions: ProdSolutions;
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    production: Production;
  }
}

/** Production agents, production solutions and their documents, production users (docs/solutions-and-admin.md). */
export const productionModule = defineModule({
  name: 'production',
  needs: ['sessions', 'solutions', 'runner', 'folders', 'users', 'policy'],
  start(ctx) {
    const { config, db } = ctx;
    const sessions = ctx.get('sessions');
    const { catalog, roles, admin } = ctx.get('solutions');
    const solutionAgents = new SolutionAgents(db, config);
    const scriptPolicy = scriptCheck(ctx.get('policy'), () => ctx.tools.get('Bash'));
    // The agents a DAG may name: both kinds, each from its own store.
    const agentIds = async (userId: string) => new Set([...(await solutionAgents.ids(userId)), ...(await prodAgents.ids(userId))]);
    const prodAgents: ProdAgents = new ProdAgents({ db, config, catalog, roles, sessions, runner: ctx.get('runner').runner, folders: ctx.get('folders'), agentIds, scriptPolicy });
    const prodSolutions = new ProdSolutions(db, sessions);
    const documents = new Documents(
      db,
      (id) => prodSolutions.touch(id),
      (userId, id) => prodSolutions.get(userId, id),
      async (userId) => {
        const ids = await agentIds(userId);
        return {
          roleExists: (roleId, solutionId) => catalog.list().some((s) => (solutionId == null || s.id === solutionId) && s.roles.some((r) => r.id === roleId)),
          agentExists: (agentId) => ids.has(agentId),
        };
      },
    );
    // The records and their documents refer to each other; both are this module's own.
    prodSolutions.documents = documents;
    return {
      provides: { prodAgents, prodSolutions },
      routes: [
        { plugin: prodUserRoutes, opts: { prodUsers: new ProdUsers(ctx.get('users')), isAdmin: (u: string) => admin.isAdmin(u) } },
        { plugin: prodAgentRoutes, opts: { agents: prodAgents } },
        { plugin: prodSolutionRoutes, opts: { records: prodSolutions, documents, agents: solutionAgents } },
      ],
    };
  },
});
