import type { Server as HttpServer } from 'node:http';
import type { Duplex } from 'node:stream';
import { Server } from 'socket.io';
import type { Config } from '../config/index.js';
import type { Logger } from '../lib/logger.js';
import type { Authenticator } from './auth.js';
import { AppError } from './errors.js';
import { limitPending } from './socket-budget.js';
import type { AppServer, AppSocket, SocketData } from './socket-types.js';

export type { AppServer, AppSocket, SocketData };

/** A handler set attached to every authenticated socket (chat, subscriptions, ...). */
export type SocketModule = (socket: AppSocket, io: AppServer) => void;

export const keyRoom = (keyId: string) => `key:${keyId}`;
export const userRoom = (userId: string) => `user:${userId}`;

/** What a user over AGENTSVC_MAX_SOCKETS_PER_USER is told, in connect_error or in system:error. */
function tooMany(cap: number) {
  return {
    code: 'TOO_MANY_CONNECTIONS',
    message: `too many connections: this user already has ${cap} open Socket.IO connections (AGENTSVC_MAX_SOCKETS_PER_USER); close one and retry`,
  };
}

/** Each gateway's HTTP server and its WebSocket connections, for closeGateway. */
const serverOf = new WeakMap<AppServer, { http: HttpServer; upgraded: Set<Duplex> }>();

/**
 * Closes every socket and then the HTTP server (socket.io's close waits for both). A WebSocket
 * whose peer does not answer the close handshake is cut after `graceMs`: ws waits 30 s for the
 * answer, and a browser slow to give it under load held the shutdown past its limit ("hard",
 * waiting on "sockets", in CI's test/console/restart.test.ts).
 */
export async function closeGateway(io: AppServer, graceMs = 2000): Promise<void> {
  const cut = setTimeout(() => {
    for (const s of serverOf.get(io)?.upgraded ?? []) s.destroy();
  }, graceMs);
  // The HTTP server's close ends the connections idle at that moment only: a keep-alive connection
  // whose request was still being answered then stays open for keepAliveTimeout (72 s) once it is
  // done, and socket.io's close waits for it (CI's console/restart.test.ts: a browser's request in
  // flight at the stop held it "hard" on "sockets"). Idle connections are ended as they go idle.
  const idle = setInterval(() => serverOf.get(io)?.http.closeIdleConnections(), 50);
  try {
    await io.close();
  } finally {
    clearTimeout(cut);
    clearInterval(idle);
  }
}

/**
 * Socket.IO on the same HTTP server at /socket.io/. The handshake's `auth.token` is checked like a
 * bearer key; a missing or bad one ends in connect_error. Each socket joins its key's room so a
 * revoked key can disconnect every socket that used it, on every node.
 */
export function createGateway(server: HttpServer, deps: { config: Config; users: Authenticator; modules?: SocketModule[]; logger?: Logger }): AppServer {
  const io: AppServer = new Server(server, {
    path: '/socket.io/',
    // Twice the limit: up to it a message gets an error ack (PAYLOAD_TOO_LARGE); beyond, the transport drops it.
    maxHttpBufferSize: deps.config.limits.socketMessage * 2,
    cors: { origin: true, credentials: true },
    serveClient: false,
  });
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (_req, socket: Duplex) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
  });
  serverOf.set(io, { http: server, upgraded });
  const cap = deps.config.limits.socketsPerUser;
  const openFor = (userId: string) => io.of('/').adapter.rooms.get(userRoom(userId))?.size ?? 0;
  io.use(async (socket, next) => {
    try {
      const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
      // Without auth.token, a browser's sign-in cookie (checked against the Origin: src/features/identity).
      const identity =
        token === undefined && deps.users.cookie
          ? await deps.users.cookie(socket.request.headers, 'socket')
          : await deps.users.authenticate(typeof token === 'string' ? token : undefined);
      if (!identity) return next(Object.assign(new Error('unauthorized: missing or invalid auth.token'), { data: { code: 'UNAUTHORIZED' } }));
      if (openFor(identity.user.id) >= cap) {
        const e = tooMany(cap);
        return next(Object.assign(new Error(e.message), { data: { code: e.code } }));
      }
      const { id, username, isAdmin, role } = identity.user;
      socket.data.user = { id, username, isAdmin, role };
      socket.data.keyId = identity.keyId;
      next();
    } catch (e) {
      if (e instanceof AppError) return next(Object.assign(new Error(e.message), { data: { code: e.code } }));
      next(Object.assign(new Error('authentication unavailable'), { data: { code: 'UNAVAILABLE' } }));
    }
  });
  io.on('connection', (socket) => {
    // The middleware's check is asynchronous, so handshakes racing each other can all pass it;
    // this one runs synchronously per connection and is the bound that holds.
    if (openFor(socket.data.user.id) >= cap) {
      socket.emit('system:error', { session_id: null, ...tooMany(cap) });
      socket.disconnect(true);
      return;
    }
    socket.join([keyRoom(socket.data.keyId), userRoom(socket.data.user.id)]);
    limitPending(socket, deps.config.limits.socketBuffer, (pending) =>
      deps.logger?.warn({ user_id: socket.data.user.id, pending_bytes: pending }, 'a socket stopped reading its events; disconnected it (AGENTSVC_SOCKET_BUFFER_BYTES)'),
    );
    for (const m of deps.modules ?? []) m(socket, io);
    // Every client event sent with an ack gets one (docs/socket-protocol.md): one nobody handles says so.
    socket.onAny((event: unknown, ...args: unknown[]) => {
      const ack = args.at(-1);
      if (typeof ack !== 'function' || socket.eventNames().includes(String(event))) return;
      ack({ ok: false, error: { code: 'UNKNOWN_EVENT', message: `unknown event ${JSON.stringify(String(event).slice(0, 100))}` } });
    });
  });
  return io;
}

export function disconnectKey(io: AppServer, keyId: string) {
  io.in(keyRoom(keyId)).disconnectSockets(true);
}

