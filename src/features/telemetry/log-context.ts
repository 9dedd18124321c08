/**
 * A request id on every log line written on behalf of a request (docs/operations.md): fastify binds
 * `reqId` to `req.log` only, while the services log through the app's logger. An
 * AsyncLocalStorage holds the id of the REST request or Socket.IO client event being handled, and
 * the pino mixin adds it as `reqId` to any line that has none, so a run's lines (its failure
 * included) carry the id of the `chat:send` that started it. Lines of no request (start, timers,
 * the retention sweep) have none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppServer } from '../../platform/server/gateway.js';

const current = new AsyncLocalStorage<string>();
let events = 0;

/** The id of the request or client event this code runs for, if any. */
export function requestId(): string | undefined {
  return current.getStore();
}

/** pino's `mixin`: `reqId` on a line logged while a request or event is handled (req.log binds its own). */
export function logMixin(_obj: object, _level: number, logger?: { bindings(): Record<string, unknown> }): Record<string, unknown> {
  const id = current.getStore();
  if (id === undefined || logger?.bindings().reqId !== undefined) return {};
  return { reqId: id };
}

/** Every request's handling (hooks, handler, what it starts) runs with its fastify id as the current one. */
export const requestContext = fp(
  async (app: FastifyInstance, opts: { inner?: { plugin: (app: FastifyInstance, o: object) => Promise<void>; opts: object } }) => {
    app.addHook('onRequest', (req, _reply, done) => current.run(req.id, done));
    // Another request hook (the traces' spans) registered inside this one's context.
    if (opts.inner) await app.register(opts.inner.plugin, opts.inner.opts);
  },
  { name: 'request-context' },
);

/** Every client event on the sockets of `io` runs with an id of its own (`ev-N`, as fastify's `req-N`). */
export function socketContext(io: AppServer): void {
  io.on('connection', (socket) => {
    socket.use((_packet, next) => current.run(`ev-${++events}`, next));
  });
}
