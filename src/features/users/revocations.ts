import pg from 'pg';
import { type AppServer, disconnectKey, userRoom } from '../../platform/server/gateway.js';
import type { UserService } from './service.js';
import { ACCESS, accessChange, KEY_REVOKED_CHANNEL } from './service.js';

/** Name on the listener's connection, so operators (and tests) can find it in pg_stat_activity. */
export const REVOCATION_LISTENER_NAME = 'agentsvc-key-revocations';

export interface RevocationHandlers {
  /** A key was deleted (by any process): drop what uses it. */
  revoked(keyId: string): void;
  /**
   * Called after every reconnect: deletions announced while the listener was down were missed, so
   * the owner re-checks the keys it still serves.
   */
  resync(): Promise<void>;
  log?(message: string): void;
}

/**
 * LISTEN for key deletions, on a dedicated connection that comes back after a database blip
 * (restart, failover, pg_terminate_backend) with exponential backoff (0.1 s doubling to 5 s):
 * without it revocation would silently stop until the process restarts.
 */
export class RevocationListener {
  private client: pg.Client | null = null;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private attempt = 0;

  private constructor(
    private readonly url: string,
    private readonly on: RevocationHandlers,
  ) {}

  /** Resolves once the first LISTEN is in place (a failure here is a start failure). */
  static async start(url: string, on: RevocationHandlers): Promise<RevocationListener> {
    const l = new RevocationListener(url, on);
    await l.connect();
    return l;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: REVOCATION_LISTENER_NAME });
    const onLost = (err?: Error) => {
      // Only the established connection reconnects; a failed attempt is retried by its caller.
      if (this.client !== client) return;
      this.client = null;
      client.end().catch(() => {});
      if (!this.closed) {
        this.on.log?.(`key revocation listener lost its connection (${err?.message ?? 'closed'}); reconnecting`);
        this.schedule();
      }
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (n) => n.channel === KEY_REVOKED_CHANNEL && n.payload && this.on.revoked(n.payload));
    try {
      await client.connect();
      await client.query(`listen ${KEY_REVOKED_CHANNEL}`);
    } catch (e) {
      client.end().catch(() => {});
      throw e;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.attempt = 0;
  }

  private schedule() {
    if (this.closed || this.timer) return;
    const delay = Math.min(5000, 100 * 2 ** this.attempt++);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect().then(
        () => this.on.resync().catch((e) => this.on.log?.(`key revocation resync failed: ${(e as Error).message}`)),
        (e) => {
          this.on.log?.(`key revocation listener cannot reconnect yet: ${(e as Error).message}`);
          this.schedule();
        },
      );
    }, delay);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}

/**
 * Disconnects the sockets of keys deleted by any process (NOTIFY), and after the listener had to
 * reconnect, those of keys deleted while it was away; hands every announcement (access changes
 * too) to `UserService.onRevoked`.
 */
export function watchRevocations(io: AppServer, users: UserService, url: string, log?: (m: string) => void): Promise<RevocationListener> {
  return RevocationListener.start(url, {
    // `user:<id>`: a disabled user (src/features/identity); `access:…`: read access that may have
    // shrunk, which closes no socket (its listeners check subscriptions again); otherwise a key's
    // or a sign-in's id.
    revoked: (id) => {
      if (id.startsWith('user:')) io.in(userRoom(id.slice(5))).disconnectSockets(true);
      else if (!accessChange(id)) disconnectKey(io, id);
      users.heardRevoked(id);
    },
    resync: async () => {
      // API keys only: sign-ins (`sgn_`) are re-checked by the identity module's own sweep.
      const served = [...io.of('/').adapter.rooms.keys()].filter((r) => r.startsWith('key:key_')).map((r) => r.slice(4));
      const alive = await users.existingKeyIds(served);
      for (const id of served) if (!alive.has(id)) disconnectKey(io, id);
      // Access changes missed meanwhile are not stored anywhere: every subscription is checked again.
      users.heardRevoked(ACCESS.all);
    },
    log,
  });
}
