import { defineModule } from '../../platform/lib/modules.js';
import { storageQuota } from '../../core/files/quota.js';
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
  needs: [],
  start({ config, db }) {
    const users = new UserService(db.em);
    storageQuota.setLimit(config.workspaces, config.userQuotaBytes);
    let listener: RevocationListener | null = null;
    return {
      provides: users,
      routes: [
        { plugin: userRoutes, opts: { users, storage: async (id: string) => ({ used_bytes: await storageQuota.used({ root: config.workspaces, user: id }), quota_bytes: storageQuota.limitOf(config.workspaces) }) } },
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
