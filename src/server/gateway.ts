import type { Server as HttpServer } from 'node:http';
import { Server, type Socket } from 'socket.io';
import type { Config } from '../config/index.js';
import type { User } from '../db/entities.js';
import type { UserService } from '../users/service.js';

export interface SocketData {
  user: User;
  keyId: string;
}
export type AppSocket = Socket<any, any, any, SocketData>;
export type AppServer = Server<any, any, any, SocketData>;

/** A handler set attached to every authenticated socket (chat, subscriptions, ...). */
export type SocketModule = (socket: AppSocket, io: AppServer) => void;

export const keyRoom = (keyId: string) => `key:${keyId}`;

/**
 * Socket.IO on the same HTTP server at /socket.io/. The handshake's `auth.token` is checked like a
 * bearer key; a missing or bad one ends in connect_error. Each socket joins its key's room so a
 * revoked key can disconnect every socket that used it, on every node.
 */
export function createGateway(server: HttpServer, deps: { config: Config; users: UserService; modules?: SocketModule[] }): AppServer {
  const io: AppServer = new Server(server, {
    path: '/socket.io/',
    // Twice the limit: up to it a message gets an error ack (PAYLOAD_TOO_LARGE); beyond, the transport drops it.
    maxHttpBufferSize: deps.config.limits.socketMessage * 2,
    cors: { origin: true, credentials: true },
    serveClient: false,
  });
  io.use(async (socket, next) => {
    try {
      const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
      const identity = await deps.users.authenticate(typeof token === 'string' ? token : undefined);
      if (!identity) return next(Object.assign(new Error('unauthorized: missing or invalid auth.token'), { data: { code: 'UNAUTHORIZED' } }));
      socket.data.user = identity.user;
      socket.data.keyId = identity.keyId;
      next();
    } catch (e) {
      next(Object.assign(new Error('authentication unavailable'), { data: { code: 'UNAVAILABLE' } }));
    }
  });
  io.on('connection', (socket) => {
    socket.join(keyRoom(socket.data.keyId));
    for (const m of deps.modules ?? []) m(socket, io);
  });
  return io;
}

export function disconnectKey(io: AppServer, keyId: string) {
  io.in(keyRoom(keyId)).disconnectSockets(true);
}
