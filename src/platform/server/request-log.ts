import type { FastifyInstance } from 'fastify';

/**
 * One log line per request, written when the answer has gone out: method, route URL, status and
 * whole milliseconds. Fastify's own request logging writes two lines per request ("incoming
 * request", then "request completed" with `responseTime=16.462349999987055`), which doubled the
 * log and made `agentsvc logs` hard to read; the app turns it off (`disableRequestLogging`) and
 * registers this instead.
 */
export function logRequests(app: FastifyInstance): void {
  app.addHook('onResponse', async (req, reply) => {
    req.log.info({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
}
