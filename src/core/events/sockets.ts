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

/** The parts of engine.io's connection that coalesceWrites reads and replaces (not in its public types). */
interface EngineConn {
  flush(): void;
  transport?: { name?: string; socket?: { _socket?: { cork(): void; uncork(): void } } };
}

const coalesced = new WeakSet<object>();

/**
 * One TCP write per tick for a connection, whatever it sends in that tick. engine.io hands each
 * packet to the WebSocket as it is emitted, and each became a frame written by its own syscall: a
 * run's start sends its ack, chat:start, turn:start and turn:end together, and writes to the
 * socket were the largest share of a run start's CPU (bench/streaming.ts, a profile of paced
 * K=200: 15% of the samples, a `writev` per event). Here the connection's flush waits for the end
 * of the tick (process.nextTick: no event waits for I/O or a timer) and its frames are written
 * corked: one `writev` for all of them. Nothing else changes: the packets stay in engine.io's
 * buffer until then, where the socket budget counts them (src/platform/server/socket-budget.ts).
 * Once per connection, whichever of its sockets asks.
 */
export function coalesceWrites(socket: ProtocolSocket): void {
  const conn = socket.conn as unknown as EngineConn;
  if (coalesced.has(conn)) return;
  coalesced.add(conn);
  const flush = conn.flush.bind(conn);
  let due = false;
  const flushCorked = () => {
    due = false;
    const t = conn.transport;
    // The WebSocket's TCP socket (ws keeps it as `_socket`); long polling writes whole payloads.
    const raw = t?.name === 'websocket' ? t.socket?._socket : undefined;
    raw?.cork();
    try {
      flush();
    } finally {
      raw?.uncork();
    }
  };
  conn.flush = () => {
    if (due) return;
    due = true;
    process.nextTick(flushCorked);
  };
}
