import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { User } from '../db/entities.js';
import type { UserService } from '../users/service.js';
import { Errors } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    identity: { user: User; keyId: string } | null;
  }
}

/** Paths reachable without a key (CONTRACT.md section 2), and the docs page. */
const PUBLIC = [/^\/api\/health\/?$/, /^\/healthz\/?$/, /^\/api\/config\/?$/, /^\/api\/share\/[^/]+\/?$/, /^\/api\/docs(\/|$)/, /^\/api\/openapi\.json$/];

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
  async (app: FastifyInstance, opts: { users: UserService }) => {
    app.decorateRequest('identity', null);
    app.addHook('onRequest', async (req) => {
      const path = req.url.split('?')[0];
      if (!path.startsWith('/api') || PUBLIC.some((re) => re.test(path))) return;
      const identity = await opts.users.authenticate(bearer(req.headers.authorization));
      if (!identity) throw Errors.unauthorized();
      req.identity = identity;
    });
  },
  { name: 'auth' },
);
