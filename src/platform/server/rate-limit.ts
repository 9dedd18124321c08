import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { Errors } from './errors.js';

/**
 * REST requests per user and minute (AGENTSVC_RATE_LIMIT_PER_MINUTE; 0 turns it off), counted by
 * @fastify/rate-limit in one-minute windows. With REDIS_URL the count lives in Redis, so the limit
 * holds for a user across every node (the plugin's Redis store); without it, in this process.
 * Registered after the key check, whose hook runs first: a request is counted against the user
 * its key names, and public routes and requests without a valid key (401) are never counted.
 * If Redis is away the limit is skipped rather than failing every request (`skipOnError`).
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, opts: { perMinute: number; redisUrl?: string }) => {
    if (opts.perMinute <= 0) return;
    let redis: Redis | undefined;
    if (opts.redisUrl) {
      // Its own connection: commands must fail fast while Redis is away instead of queueing.
      redis = new Redis(opts.redisUrl, { lazyConnect: false, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
      redis.on('error', () => {}); // reconnects by itself; a request meanwhile goes unlimited
      app.addHook('onClose', async () => {
        redis?.disconnect();
      });
    }
    await app.register(rateLimit, {
      global: true,
      max: opts.perMinute,
      timeWindow: 60_000,
      hook: 'onRequest',
      redis,
      nameSpace: 'agentsvc:rate:',
      skipOnError: true,
      allowList: (req) => !req.identity,
      keyGenerator: (req) => req.identity?.user.id ?? '',
      addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
      addHeaders: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false, 'retry-after': true },
      errorResponseBuilder: (_req, context) => Errors.rateLimited(Math.max(1, Math.ceil(context.ttl / 1000))),
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
