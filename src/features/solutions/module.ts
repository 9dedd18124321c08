import { defineModule, type Provides } from '../../platform/lib/modules.js';
import { SolutionCatalog } from './catalog.js';
import { Roles } from './roles.js';
import { solutionRoutes } from './routes.js';

export interface Solutions {
  catalog: SolutionCatalog;
  roles: Roles;
  admin: Provides['admin'];
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** The solutions found under AGENTSVC_HOME and the plugins' folders. */
    catalog: SolutionCatalog;
    solutions: Solutions;
  }
}

export const catalogModule = defineModule({
  name: 'catalog',
  needs: [],
  start(ctx) {
    const catalog = SolutionCatalog.load(SolutionCatalog.roots(ctx.config.home, ctx.config.plugins));
    ctx.warnings.push(...catalog.problems);
    return { provides: catalog };
  },
});

/**
 * Roles in sessions (docs/solutions-and-admin.md): checked against the admins' grants at creation; at each run a
 * role's prompt joins the system prompt and only its tools are offered.
 */
export const solutionsModule = defineModule({
  name: 'solutions',
  needs: ['catalog', 'admin', 'folders', 'sessions'],
  start(ctx) {
    const catalog = ctx.get('catalog');
    const admin = ctx.get('admin');
    const roles = new Roles({ catalog, sessions: ctx.get('sessions'), workspaces: ctx.get('folders'), access: admin });
    return {
      provides: { catalog, roles, admin },
      toolFilters: [roles.filter],
      prompts: [roles.prompt],
      hooks: [{ on: 'session.plan', name: 'solutions.roles', run: ({ userId, input }) => roles.plan(userId, input) }],
      routes: [{ plugin: solutionRoutes, opts: { catalog, access: () => roles.access, isAdmin: (u: string) => admin.isAdmin(u), userExists: (u: string) => admin.userExists(u) } }],
    };
  },
});
