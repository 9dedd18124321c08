import type { Database } from '../../platform/db/index.js';

export interface LiveShare {
  session_id: string;
  token_hash: string;
  expires_at: Date;
}

/** The `share_links` table: share tokens, stored as their SHA-256 only (docs/sharing-and-portability.md). */
export class ShareLinkStore {
  constructor(private readonly db: Database) {}

  /** A new link of the session that expires in `ttlSeconds`; answers when. */
  async create(id: string, tokenHash: string, sessionId: string, ttlSeconds: number): Promise<Date> {
    const [row] = await this.db.sql<{ expires_at: Date }>(
      'insert into share_links (id, token_hash, session_id, expires_at) values (?, ?, ?, now() + make_interval(secs => ?)) returning expires_at',
      [id, tokenHash, sessionId, ttlSeconds],
    );
    return new Date(row.expires_at);
  }

  /** Revokes the session's live link with this hash; false when there is none. */
  async revoke(tokenHash: string, sessionId: string): Promise<boolean> {
    const r = await this.db.sql('update share_links set revoked_at = now() where token_hash = ? and session_id = ? and revoked_at is null returning id', [tokenHash, sessionId]);
    return r.length > 0;
  }

  /** PATCH .../sharing {shared: false}: every active link of the session is revoked. */
  async revokeAll(sessionId: string): Promise<void> {
    await this.db.sql('update share_links set revoked_at = now() where session_id = ? and revoked_at is null', [sessionId]);
  }

  /** The link with this hash, if it is neither revoked nor expired. */
  async live(tokenHash: string): Promise<LiveShare | null> {
    const [row] = await this.db.sql<LiveShare>(
      'select session_id, token_hash, expires_at from share_links where token_hash = ? and revoked_at is null and expires_at > now()',
      [tokenHash],
    );
    return row ?? null;
  }
}
