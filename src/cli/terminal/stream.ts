import { io, type Socket } from 'socket.io-client';
import { type Api, ClientError } from './api.js';

/**
 * One session's event stream over Socket.IO. It remembers the seq of the last event it delivered;
 * after a dropped connection it reconnects and subscribes again with that `since_seq`, so the
 * server replays exactly what was missed (CONTRACT.md section 4): nothing lost, nothing repeated.
 */

// biome-ignore lint/suspicious/noExplicitAny: event payloads are the service's JSON, read field by field
export type Payload = any;
export interface ServerEvent {
  name: string;
  payload: Payload;
}

export type Ack = { ok: true; [k: string]: unknown } | { ok: false; error: { code: string; message: string } };

export const SESSION_EVENTS = ['chat:start', 'turn:start', 'turn:patch', 'turn:end', 'chat:end', 'system:error', 'session:resync'];

export interface StreamOptions {
  onEvent: (e: ServerEvent) => void;
  /** Connection state changes, for a status line. */
  onStatus?: (s: 'reconnecting' | 'reconnected' | 'lost', detail?: string) => void;
  /** Reconnection delay bounds (ms). */
  reconnectDelay?: number;
}

export class SessionStream {
  private socket: Socket | null = null;
  /** Seq of the last event delivered (or skipped as history). */
  lastSeq = 0;
  /** Events before the first subscribe's ack are history: counted, not delivered. */
  private replaying = true;
  private closed = false;
  reconnects = 0;

  constructor(
    private readonly api: Api,
    readonly sessionId: string,
    private readonly opts: StreamOptions,
  ) {}

  /** Connect and subscribe; rejects with a ClientError (down, auth, not_found). */
  async open(): Promise<void> {
    const socket = io(this.api.url, {
      auth: { token: this.api.target.key ?? '' },
      transports: ['websocket'],
      reconnection: true,
      reconnectionDelay: this.opts.reconnectDelay ?? 500,
      reconnectionDelayMax: 5000,
      timeout: 10_000,
    });
    this.socket = socket;
    socket.onAny((name: string, payload: Payload) => this.receive(name, payload));
    await new Promise<void>((resolve, reject) => {
      const fail = (e: Error & { data?: { code?: string } }) => {
        socket.off('connect', ok);
        socket.disconnect();
        const code = e.data?.code;
        if (code === 'UNAUTHORIZED') reject(new ClientError('auth', `the key from ${this.api.target.keyFrom} was refused by the real-time channel (${e.message})`));
        else reject(this.api.down(e));
      };
      const ok = () => {
        socket.off('connect_error', fail);
        resolve();
      };
      socket.once('connect', ok);
      socket.once('connect_error', fail);
    });
    // A subscription since 0 replays the session's history before the ack: those events only
    // tell us the current position; from the ack on, events are live and delivered.
    await this.subscribe(0);
    this.replaying = false;
    socket.on('connect', () => {
      if (this.closed) return;
      this.reconnects++;
      this.subscribe(this.lastSeq).then(
        () => this.opts.onStatus?.('reconnected'),
        (e) => this.opts.onStatus?.('lost', (e as Error).message),
      );
    });
    socket.on('disconnect', (reason) => {
      if (this.closed) return;
      // The server closed it (key revoked): socket.io does not retry on its own.
      if (reason === 'io server disconnect') this.opts.onStatus?.('lost', 'the service closed the connection (key revoked?)');
      else this.opts.onStatus?.('reconnecting', reason);
    });
  }

  private receive(name: string, payload: Payload) {
    if (!SESSION_EVENTS.includes(name) || payload?.session_id !== this.sessionId) return;
    if (name === 'session:resync') {
      this.lastSeq = payload.seq;
      if (!this.replaying) this.opts.onEvent({ name, payload });
      return;
    }
    if (typeof payload.seq === 'number') {
      if (payload.seq <= this.lastSeq) return; // a duplicate across a reconnect
      this.lastSeq = payload.seq;
    }
    if (!this.replaying) this.opts.onEvent({ name, payload });
  }

  private async subscribe(since: number) {
    const ack = await this.request('session:subscribe', { session_id: this.sessionId, since_seq: since });
    if (!ack.ok) throw this.ackError(ack);
  }

  ackError(ack: Extract<Ack, { ok: false }>): ClientError {
    const { code, message } = ack.error;
    const kind = code === 'NOT_FOUND' ? 'not_found' : code === 'SESSION_BUSY' ? 'busy' : code === 'UNAUTHORIZED' ? 'auth' : 'invalid';
    return new ClientError(kind, code === 'NOT_FOUND' ? `session ${this.sessionId} not found` : message, undefined, code);
  }

  /** Emit with an acknowledgement; rejects when the service does not answer in time. */
  async request(event: string, payload: unknown, timeoutMs = 15_000): Promise<Ack> {
    if (!this.socket) throw new ClientError('protocol', 'not connected');
    try {
      return (await this.socket.timeout(timeoutMs).emitWithAck(event, payload)) as Ack;
    } catch {
      throw new ClientError('down', `no answer to ${event} within ${timeoutMs / 1000}s from ${this.api.url}`);
    }
  }

  /** Drop the transport as a network failure would (the client then reconnects): for tests and `--simulate-drop`. */
  dropTransport() {
    (this.socket?.io as unknown as { engine?: { close(): void } })?.engine?.close();
  }

  close() {
    this.closed = true;
    this.socket?.disconnect();
  }
}
