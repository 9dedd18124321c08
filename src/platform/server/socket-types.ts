/** The types of the service's Socket.IO server and sockets (gateway.ts builds them). */
import type { Server, Socket } from 'socket.io';
import type { User } from '../db/entities.js';

export interface SocketData {
  /**
   * Who the socket is: plain values copied from the user entity. The entity itself would keep the
   * entity manager it was loaded by alive (its identity map and unit of work) for as long as the
   * socket is open: about 9 KiB per idle socket.
   */
  user: Pick<User, 'id' | 'username' | 'isAdmin'>;
  keyId: string;
}
// biome-ignore lint/suspicious/noExplicitAny: event maps are untyped: payloads are validated by each handler
export type AppSocket = Socket<any, any, any, SocketData>;
// biome-ignore lint/suspicious/noExplicitAny: as AppSocket
export type AppServer = Server<any, any, any, SocketData>;
