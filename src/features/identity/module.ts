import { defineModule } from '../../platform/lib/modules.js';
import type { SocketModule } from '../../platform/server/gateway.js';
import { OidcProvider } from './provider.js';
import { EVENT_ROLES } from './role-table.js';
import { identityRoutes } from './routes.js';
import { Identities, roleOf } from './service.js';
import { IdentityStore } from './store.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Sign-ins, roles and the edge's authenticator (docs/identity.md). */
    identity: Identities;
  }
}

/** How long `up` waits for the provider's discovery before it goes on with a warning. */
const DISCOVERY_WAIT_MS = 2000;

/** A socket event the caller's role may not use is acked FORBIDDEN_ROLE and goes no further. */
const eventGate: SocketModule = (socket) => {
  socket.use(([event, ...args], next) => {
    // Own keys only: an event named `constructor` or `toString` is not a line of the table.
    const allowed = typeof event === 'string' && Object.hasOwn(EVENT_ROLES, event) ? EVENT_ROLES[event as keyof typeof EVENT_ROLES] : undefined;
    const role = roleOf(socket.data.user);
    if (!allowed || allowed.includes(role)) return next();
    const ack = args.at(-1);
    if (typeof ack === 'function') ack({ ok: false, error: { code: 'FORBIDDEN_ROLE', message: `a ${role} may not use ${event}` } });
  });
};

/** Sign-in with an OpenID Connect provider, sign-in records, roles and disabling users (docs/identity.md). */
export const identityModule = defineModule({
  name: 'identity',
  needs: ['users', 'admin'],
  start(ctx) {
    const { config, db, warnings } = ctx;
    const oidc = config.identity.oidc;
    const provider = oidc ? new OidcProvider(oidc) : null;
    const identities = new Identities(new IdentityStore(db), ctx.get('users'), ctx.get('admin'), { ...config.identity, publicUrl: config.share.publicUrl }, provider);
    return {
      provides: identities,
      routes: [{ plugin: identityRoutes, opts: { identities } }],
      sockets: [eventGate],
      jobs: provider
        ? [
            {
              name: 'sign-in provider discovery',
              start: async () => {
                const failed = await Promise.race([provider.warmUp(), new Promise<string>((r) => setTimeout(() => r(`no answer within ${DISCOVERY_WAIT_MS / 1000} s`), DISCOVERY_WAIT_MS).unref())]);
                if (failed) warnings.push(`sign-in provider ${oidc?.issuer} cannot be reached yet (${failed}); the sign-in page says so until it answers`);
              },
            },
          ]
        : [],
    };
  },
});
