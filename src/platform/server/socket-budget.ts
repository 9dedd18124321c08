import type { AppSocket } from './socket-types.js';

/** The parts of engine.io's connection this reads (not in its public types). */
interface EngineConn {
  on(ev: 'packetCreate', fn: (p: { data?: unknown }) => void): void;
  on(ev: 'flush', fn: () => void): void;
  close(discard?: boolean): void;
  transport?: { socket?: { bufferedAmount?: number; terminate?: () => void } };
}

const sizeOf = (d: unknown) => (typeof d === 'string' ? d.length : d instanceof Uint8Array ? d.byteLength : 0);

/** How long a connection may stay over its budget without its client taking a byte. */
const GRACE_MS = 1000;

/**
 * Backpressure (docs/socket-protocol.md): a client that does not read its socket must not make the service hold
 * its events without bound (two such sockets took it from 482 to 1,527 MB in 40 s). What a
 * connection has pending is what engine.io holds while its transport is busy plus what the
 * WebSocket has not handed to the kernel yet. Past `budget` bytes the connection is cut when its
 * client takes nothing for GRACE_MS (it stopped reading), and at once past 4x the budget plus the
 * largest single event (one whole-turn event of a long answer is not, alone, a reason), so a client
 * that reads, only too slowly, is bounded too. Cut: its buffers freed at once (no closing
 * handshake waiting on a client that does not read), `onOver` told. The client reconnects and
 * resumes with since_seq.
 */
export function limitPending(socket: AppSocket, budget: number, onOver: (pending: number) => void) {
  const conn = socket.conn as unknown as EngineConn;
  const state = { held: 0 };
  held.set(socket, state);
  let cut = false;
  let largest = 0;
  let added = 0;
  let before = 0;
  let timer: NodeJS.Timeout | null = null;
  const cutNow = (pending: number) => {
    cut = true;
    if (timer) clearTimeout(timer);
    // Not inside engine.io's send: after the emit that crossed the budget has returned.
    setImmediate(() => {
      onOver(pending);
      conn.transport?.socket?.terminate?.();
      conn.close(true);
    });
  };
  const check = () => {
    timer = null;
    const now = pendingBytes(socket);
    if (cut || now <= budget || !socket.connected) return;
    // Taken by the client since the last look: what was pending, plus what was added, minus now.
    if (before + added - now <= 0) return cutNow(now);
    before = now;
    added = 0;
    timer = setTimeout(check, GRACE_MS);
  };
  conn.on('flush', () => {
    state.held = 0; // handed to the transport: counted by its bufferedAmount from now on
  });
  conn.on('packetCreate', (p) => {
    const size = sizeOf(p.data);
    state.held += size;
    added += size;
    if (size > largest) largest = size;
    if (cut) return;
    const pending = pendingBytes(socket);
    if (pending > 4 * budget + largest) return cutNow(pending);
    if (pending <= budget || timer) return;
    before = pending;
    added = 0;
    timer = setTimeout(check, GRACE_MS);
  });
  socket.once('disconnect', () => timer && clearTimeout(timer));
}

const held = new WeakMap<AppSocket, { held: number }>();

/** Bytes of events the socket has pending: held by engine.io plus not yet handed to the kernel. */
export function pendingBytes(socket: AppSocket): number {
  const conn = socket.conn as unknown as EngineConn;
  return (held.get(socket)?.held ?? 0) + (conn.transport?.socket?.bufferedAmount ?? 0);
}

/**
 * Settles once the socket has at most `bytes` pending (or is gone): what sends a lot at once (a
 * replay, page by page) waits for a slow client instead of running into its budget.
 */
export async function drained(socket: AppSocket, bytes: number): Promise<void> {
  while (socket.connected && pendingBytes(socket) > bytes) await new Promise((r) => setTimeout(r, 20));
}
