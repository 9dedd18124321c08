import { adminRoutes } from '../admin/routes.js';
import { Admin } from '../admin/service.js';
import { defineModule } from '../lib/modules.js';
import { SolutionCatalog } from './catalog.js';
import { Roles } from './roles.js';
import { solutionRoutes } from './routes.js';

export interface Solutions {
  catalog: SolutionCatalog;
  roles: Roles;
  admin: Admin;
}

declare module '../lib/modules.js' {
  interface Provides {
    solutions: Solutions;
  }
}

/**
 * The solutions catalogue, admins and role grants, and roles in sessions (CONTRACT 13): a role's
 * prompt joins the system prompt and only its tools are offered.
 */
export const solutionsModule = defineModule({
  name: 'solutions',
  needs: ['folders'],
  start(ctx) {
    const { config, db } = ctx;
    const catalog = SolutionCatalog.load(SolutionCatalog.roots(config.home, config.plugins));
    ctx.warnings.push(...catalog.problems);
    const admin = new Admin(db, catalog);
    const roles = new Roles({ catalog, db, workspaces: ctx.get('folders'), access: admin });
    return {
      provides: { catalog, roles, admin },
      toolFilters: [roles.filter],
      prompts: [roles.prompt],
      routes: [
        { plugin: solutionRoutes, opts: { catalog, access: () => roles.access, isAdmin: (u: string) => admin.isAdmin(u), userExists: (u: string) => admin.userExists(u) } },
        { plugin: adminRoutes, opts: { admin } },
      ],
    };
  },
});
