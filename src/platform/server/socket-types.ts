/** The types of the service's Socket.IO server and sockets (gateway.ts builds them). */
import type { Server, Socket } from 'socket.io';
import type { User } from '../db/entities.js';

export interface SocketData {
  /**
   * Who the socket is: plain values copied from the user entity. The entity itself would keep the
   * entity manager it was loaded by alive (its identity map and unit of work) for as long as the
   * socket is open: about 9 KiB per idle socket.
   */
  user: Pick<User, 'id' | 'username' | 'isAdmin' | 'role'>;
  keyId: string;
}

/** A Socket.IO event map: event name to listener. */
export type EventMap = Record<string, (...args: never[]) => void>;
/** No events (what platform code listens to beyond Socket.IO's own `disconnect` and the like). */
export type NoEvents = Record<never, never>;

/** What the gateway sends by itself: a connection refused past the per-user cap, tied to no session. */
export interface GatewayEvents {
  'system:error': (payload: { session_id: null; code: string; message: string }) => void;
}

/**
 * A socket and the server, typed by the event maps of the protocol they carry. The protocol is
 * defined above this layer, from the event catalogue (src/core/events/protocol.ts; core binds it in
 * src/core/events/sockets.ts): code there reads and sends typed events. Code here knows the
 * protocol only as far as the gateway's own refusal, and takes the defaults.
 */
export type AppSocket<Listen extends EventMap = NoEvents, Emit extends GatewayEvents = GatewayEvents> = Socket<Listen, Emit, NoEvents, SocketData>;
export type AppServer<Listen extends EventMap = NoEvents, Emit extends GatewayEvents = GatewayEvents> = Server<Listen, Emit, NoEvents, SocketData>;
