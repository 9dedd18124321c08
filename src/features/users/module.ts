import { defineModule } from '../../platform/lib/modules.js';
import { watchRevocations, type RevocationListener } from './revocations.js';
import { userRoutes } from './routes.js';
import { UserService } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    users: UserService;
  }
}

/** Users and API keys; revoked keys disconnect their sockets on every node (a Postgres listener). */
export const usersModule = defineModule({
  name: 'users',
  needs: ['quota'],
  start(ctx) {
    const { db } = ctx;
    const users = new UserService(db.em);
    const quota = ctx.get('quota');
    let listener: RevocationListener | null = null;
    return {
      provides: users,
      routes: [
        { plugin: userRoutes, opts: { users, storage: async (id: string) => ({ used_bytes: await quota.used(id), quota_bytes: quota.limitBytes }) } },
      ],
      jobs: [
        {
          name: 'revocation listener',
          phase: 'infrastructure',
          start: async ({ io, app }) => {
            listener = await watchRevocations(io, users, db.url, (m) => app.log.warn(m));
          },
          stop: async () => listener?.close(),
        },
      ],
    };
  },
});
