import { io, type Socket } from 'socket.io-client';
import type { Ack, ClientEventName, ClientToServerEvents, ServerToClientEvents } from '../../src/core/events/protocol.js';
import { rest } from './api.js';

/**
 * The console's one Socket.IO connection (docs/socket-protocol.md "Server events"), made with the signed-in key. socket.io
 * reconnects by itself after a drop; whoever subscribed listens for `connect` and subscribes again
 * from its last seq. `status` drives the "reconnecting…" banner.
 */

export type { Ack };
export type LinkStatus = 'connecting' | 'live' | 'reconnecting' | 'refused';

export class Connection {
  readonly socket: Socket<ServerToClientEvents, ClientToServerEvents>;
  status: LinkStatus = 'connecting';
  private listeners = new Set<(s: LinkStatus, detail?: string) => void>();
  private closed = false;

  /** `key` null: the browser's sign-in cookie signs the handshake (the service checks its Origin). */
  constructor(key: string | null) {
    this.socket = io({
      auth: key ? { token: key } : {},
      transports: ['websocket'],
      reconnectionDelay: 300,
      reconnectionDelayMax: 3000,
    });
    this.socket.on('connect', () => this.set('live', this.changed));
    this.socket.on('disconnect', (reason) => {
      // The service closed it on purpose: socket.io does not retry by itself.
      if (reason === 'io server disconnect') void this.closedByService();
      else this.set('reconnecting');
    });
    this.socket.on('connect_error', (e: Error & { data?: { code?: string } }) => {
      if (e.data?.code === 'UNAUTHORIZED') this.set('refused', 'the key was refused');
      else if (this.status !== 'connecting') this.set('reconnecting');
    });
  }

  /** What the last reconnect after an access change said (shown once the link is live again). */
  private changed: string | undefined;

  /**
   * The service closes a person's connections when their key or sign-in is revoked, their account
   * disabled, or their access changed (a new role, a team left: the new access applies to what they
   * follow). Which one it was: ask who this is. Still signed in: connect again at once, and tell the
   * page (`agentsvc:access-changed`: the header reads the role again). Refused: REST's 401 signs the
   * page out with the reason (api.ts); anything else leaves the link closed, saying so.
   */
  private async closedByService() {
    this.set('reconnecting', 'the service closed the connection; checking the sign-in');
    const me = await rest.me().catch(() => null);
    if (this.closed) return;
    if (!me) {
      this.set('refused', 'the service closed the connection (was the key deleted, the sign-in revoked or the account disabled?)');
      return;
    }
    this.changed = `Your access changed: you are signed in as ${me.role === 'viewer' ? 'a viewer' : me.role === 'admin' ? 'an admin' : 'a member'} now.`;
    window.dispatchEvent(new CustomEvent('agentsvc:access-changed', { detail: me.role }));
    this.socket.connect();
  }

  /** The person has read the access-change notice. */
  dismiss() {
    this.changed = undefined;
    this.set(this.status);
  }

  private set(s: LinkStatus, detail?: string) {
    this.status = s;
    for (const l of this.listeners) l(s, detail);
  }

  onStatus(fn: (s: LinkStatus, detail?: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Emit with an acknowledgement; a missing answer becomes an error ack the view can show. */
  async request<N extends ClientEventName>(event: N, payload: Parameters<ClientToServerEvents[N]>[0], timeoutMs = 15_000): Promise<Ack> {
    try {
      // socket.io's types cannot resolve an event name that is still a type parameter: the signature is the one ClientToServerEvents gives N.
      const socket = this.socket.timeout(timeoutMs) as unknown as { emitWithAck(event: N, payload: Parameters<ClientToServerEvents[N]>[0]): Promise<Ack> };
      const ack = await socket.emitWithAck(event, payload);
      // The person's role may not do this: the console says so in plain words (views/sign-in.tsx).
      if (!ack.ok && ack.error.code === 'FORBIDDEN_ROLE') window.dispatchEvent(new CustomEvent('agentsvc:role-refused', { detail: ack.error.message }));
      return ack;
    } catch {
      return { ok: false, error: { code: 'TIMEOUT', message: `the service did not answer ${event} in ${timeoutMs / 1000} s` } };
    }
  }

  close() {
    this.closed = true;
    this.listeners.clear();
    this.socket.disconnect();
  }
}
