import type { AppServer, AppSocket } from '../../platform/server/socket-types.js';
import type { ClientToServerEvents, Logged, LoggedEventName, ServerToClientEvents } from './protocol.js';

/** The service's sockets as the protocol types them (protocol.ts, from the event catalogue). */
export type ProtocolSocket = AppSocket<ClientToServerEvents, ServerToClientEvents>;
export type ProtocolServer = AppServer<ClientToServerEvents, ServerToClientEvents>;

/**
 * Send one event of a session's log to a socket. The log and the event bus carry events as plain
 * records (they sit below the protocol); each was typed by the catalogue where it was emitted
 * (`RunState.emit` takes `ServerEventData` of its name), so here the record is that event again.
 */
export function sendLogged(socket: ProtocolSocket, ev: { name: string; payload: Logged }): void {
  // The compiler cannot pair a name known only as one of the union with its own payload type.
  (socket as { emit(name: LoggedEventName, payload: Logged): boolean }).emit(ev.name as LoggedEventName, ev.payload);
}
