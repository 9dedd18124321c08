import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type Authenticator, bearer, publicRoute } from '../../platform/server/auth.js';
import { AppError } from '../../platform/server/errors.js';
import type { ServiceMetrics } from './metrics.js';

export interface MetricsRouteDeps {
  metrics: ServiceMetrics;
  users: Authenticator;
  /** AGENTSVC_METRICS_TOKEN: a scraper's bearer token, besides admin keys. */
  token?: string;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * GET /metrics (docs/operations.md) in Prometheus text format, for an admin key or the metrics token, and
 * the HTTP request figures of every route. Registered unencapsulated (fastify-plugin) so its
 * onResponse hook sees the whole app. /metrics itself is a public route for the auth plugin and
 * checks its own credentials: a scraper holds a token, not a user's key.
 */
export const metricsRoutes = fp(
  async (app: FastifyInstance, { metrics, users, token }: MetricsRouteDeps) => {
    app.addHook('onResponse', async (req, reply) => {
      metrics.http(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    });
    app.get('/metrics', { config: publicRoute, schema: { hide: true } }, async (req, reply) => {
      const given = bearer(req.headers.authorization);
      if (!given) throw new AppError(401, 'UNAUTHORIZED', 'GET /metrics needs an admin key or AGENTSVC_METRICS_TOKEN as a bearer token');
      // Compared as digests: equal length, constant time, whatever was sent.
      const isToken = !!token && timingSafeEqual(digest(given), digest(token));
      if (!isToken) {
        const who = await users.authenticate(given);
        if (!who) throw new AppError(401, 'UNAUTHORIZED', 'invalid key or metrics token');
        if (!who.user.isAdmin) throw new AppError(403, 'FORBIDDEN', 'metrics are for admins (or AGENTSVC_METRICS_TOKEN)');
      }
      reply.header('cache-control', 'no-store').type(metrics.contentType);
      return metrics.text();
    });
  },
  { name: 'metrics' },
);
