import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { User } from '../db/entities.js';
import { AppError, Errors } from './errors.js';

/**
 * Who a request is: the user and the credential it came with (an API key's id, or a sign-in's id
 * for a browser's cookie or a terminal's sign-in token); `csrf` is set for a cookie sign-in.
 */
export interface Identity {
  user: User;
  keyId: string;
  via?: 'key' | 'cookie' | 'signin-token';
  csrf?: string;
}

/** What the edge needs of the users module: who a bearer key belongs to. */
export interface Authenticator {
  authenticate(token: string | undefined): Promise<Identity | null>;
  /**
   * A browser's sign-in cookie (src/features/identity): who it names, or null. `socket` is the
   * Socket.IO handshake, which must come from the service's own origin (throws AppError otherwise).
   */
  cookie?(headers: IncomingHttpHeaders, use: 'http' | 'socket'): Promise<Identity | null>;
  /** Whether the caller's role may use the matched route (docs/identity.md); throws AppError to refuse. */
  allow?(req: FastifyRequest, identity: Identity): void | Promise<void>;
  /** The roles the role table lets use a route (`x-roles` in the OpenAPI document). */
  rolesOf?(method: string, url: string): readonly string[] | 'public' | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity | null;
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

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export const authPlugin = fp(
  async (app: FastifyInstance, opts: { users: Authenticator }) => {
    app.decorateRequest('identity', null);
    // onRequest runs before the body is read or parsed, so a request without a valid key is 401
    // whatever its body (never 413/400/415). An unmatched route is not public either: without a
    // key it is 401 too, which tells an anonymous client nothing about which routes exist.
    app.addHook('onRequest', async (req) => {
      if (req.routeOptions.config?.public) return;
      const token = bearer(req.headers.authorization);
      const identity = token ? await opts.users.authenticate(token) : ((await opts.users.cookie?.(req.headers, 'http')) ?? null);
      if (!identity) throw Errors.unauthorized();
      // A cookie comes with every request the browser makes, also those another site causes: a
      // change needs the sign-in's CSRF token as well, which only our own pages can read.
      if (identity.via === 'cookie' && !SAFE_METHODS.has(req.method) && req.headers['x-csrf-token'] !== identity.csrf) {
        throw new AppError(403, 'CSRF_REQUIRED', 'a change made with a sign-in cookie needs the X-CSRF-Token header (csrf_token of GET /api/auth/me)');
      }
      req.identity = identity;
      await opts.users.allow?.(req, identity);
    });
  },
  { name: 'auth' },
);
