import { defineModule } from '../../platform/lib/modules.js';
import { adminRoutes } from './routes.js';
import { Admin } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Admins and role grants (docs/solutions-and-admin.md). */
    admin: Admin;
  }
}

export const adminModule = defineModule({
  name: 'admin',
  needs: ['catalog', 'users'],
  start(ctx) {
    const admin = new Admin(ctx.db, ctx.get('catalog'), ctx.get('users'));
    return { provides: admin, routes: [{ plugin: adminRoutes, opts: { admin } }] };
  },
});
