import { io, type Socket } from 'socket.io-client';
import { type Ack, type ClientEventName, type ClientToServerEvents, isSessionEvent, type ServerToClientEvents, type SessionEvent } from '../../core/events/protocol.js';
import { type Api, ClientError } from './api.js';

/**
 * One session's event stream over Socket.IO. It remembers the seq of the last event it delivered;
 * after a dropped connection it reconnects and subscribes again with that `since_seq`, so the
 * server replays exactly what was missed (docs/socket-protocol.md): nothing lost, nothing repeated.
 */

/** One event of the session's stream: its name and payload as the event catalogue types them (src/core/events/protocol.ts). */
export type ServerEvent = SessionEvent;
export type { Ack };

export interface StreamOptions {
  onEvent: (e: ServerEvent) => void;
  /** Connection state changes, for a status line. */
  onStatus?: (s: 'reconnecting' | 'reconnected' | 'lost', detail?: string) => void;
  /** Reconnection delay bounds (ms). */
  reconnectDelay?: number;
}

export class SessionStream {
  private socket: Socket<ServerToClientEvents, ClientToServerEvents> | null = null;
  /** Seq of the last event delivered (or skipped as history). */
  lastSeq = 0;
  /** Events before the first subscribe's ack are history: counted, not delivered. */
  private replaying = true;
  private closed = false;
  /** The service ended the subscription (`session:closed`): what it said; nothing more comes. */
  ended: { code: string; message: string } | null = null;
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
    socket.onAny((name: string, payload: unknown) => this.receive(name, payload));
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

  private receive(name: string, payload: unknown) {
    // The service sends what the catalogue says (its tests check a real run's events against it).
    if (!isSessionEvent(name) || (payload as { session_id?: unknown } | null)?.session_id !== this.sessionId) return;
    const e = { name, payload } as SessionEvent;
    if (e.name === 'session:resync') {
      this.lastSeq = e.payload.seq;
      if (!this.replaying) this.opts.onEvent(e);
      return;
    }
    if (e.name === 'session:closed') {
      // No longer readable (deleted, or its team workspace left): nothing to wait for or resubscribe to.
      this.ended = { code: e.payload.code, message: e.payload.message };
      this.opts.onEvent(e);
      this.close();
      return;
    }
    if (typeof e.payload.seq === 'number') {
      if (e.payload.seq <= this.lastSeq) return; // a duplicate across a reconnect
      this.lastSeq = e.payload.seq;
    }
    if (!this.replaying) this.opts.onEvent(e);
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
  async request<N extends ClientEventName>(event: N, payload: Parameters<ClientToServerEvents[N]>[0], timeoutMs = 15_000): Promise<Ack> {
    if (this.ended) throw this.ackError({ ok: false, error: this.ended });
    if (!this.socket) throw new ClientError('protocol', 'not connected');
    try {
      // socket.io's types cannot resolve an event name that is still a type parameter: the signature is the one ClientToServerEvents gives N.
      const socket = this.socket.timeout(timeoutMs) as unknown as { emitWithAck(event: N, payload: Parameters<ClientToServerEvents[N]>[0]): Promise<Ack> };
      return await socket.emitWithAck(event, payload);
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
