import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { User } from '../db/entities.js';
import { Errors } from './errors.js';

/** What the edge needs of the users module: who a bearer key belongs to. */
export interface Authenticator {
  authenticate(token: string | undefined): Promise<{ user: User; keyId: string } | null>;
}

declare module 'fastify' {
  interface FastifyRequest {
    identity: { user: User; keyId: string } | null;
  }
  interface FastifyContextConfig {
    /** Reachable without a key (docs/trust-boundary.md). Set only on the routes of that list. */
    public?: boolean;
  }
}

/**
 * Route config of the public routes: `app.get(path, { config: publicRoute, ... })`. The decision
 * is made on the route fastify matched, so no spelling of a URL (percent-encoding, slashes) can
 * turn a key-only route into a public one; a route without it requires a key.
 */
export const publicRoute = { public: true } as const;

export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

export function me(req: FastifyRequest): User {
  if (!req.identity) throw Errors.unauthorized();
  return req.identity.user;
}

export const authPlugin = fp(
  async (app: FastifyInstance, opts: { users: Authenticator }) => {
    app.decorateRequest('identity', null);
    // onRequest runs before the body is read or parsed, so a request without a valid key is 401
    // whatever its body (never 413/400/415). An unmatched route is not public either: without a
    // key it is 401 too, which tells an anonymous client nothing about which routes exist.
    app.addHook('onRequest', async (req) => {
      if (req.routeOptions.config?.public) return;
      const identity = await opts.users.authenticate(bearer(req.headers.authorization));
      if (!identity) throw Errors.unauthorized();
      req.identity = identity;
    });
  },
  { name: 'auth' },
);
