import { createHash } from 'node:crypto';
import type { Database } from '../../platform/db/index.js';
import { randomToken } from '../../platform/lib/ids.js';

/** What a sign-in record answers (the signed-in devices list): never its token. */
export interface SigninPublic {
  id: string;
  user_id: string;
  kind: 'browser' | 'cli';
  user_agent: string | null;
  ip: string | null;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

export interface SigninRow {
  id: string;
  user_id: string;
  csrf_token: string;
  kind: 'browser' | 'cli';
  user_agent: string | null;
  ip: string | null;
  id_token: string | null;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

export interface SigninRequest {
  id: string;
  kind: 'browser' | 'device' | 'loopback';
  nonce: string | null;
  code_verifier: string | null;
  device_code: string | null;
  return_to: string | null;
  /** `loopback` (agentsvc login --browser): the CLI's redirect URI, used again for the exchange. */
  redirect_uri?: string | null;
}

export type AuditAction = 'signin' | 'signin_failed' | 'signout' | 'role_changed' | 'user_disabled' | 'user_enabled';

export interface AuditRecord {
  id: string;
  at: string;
  action: AuditAction;
  user_id: string | null;
  actor_id: string | null;
  detail: Record<string, unknown>;
}

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');
const iso = (d: Date | string) => new Date(d).toISOString();

export function toPublic(r: SigninRow): SigninPublic {
  return {
    id: r.id,
    user_id: r.user_id,
    kind: r.kind,
    user_agent: r.user_agent,
    ip: r.ip,
    created_at: iso(r.created_at),
    last_seen_at: iso(r.last_seen_at),
    expires_at: iso(r.expires_at),
  };
}

/** The tables `user_links`, `signins`, `signin_requests` and `identity_audit` (docs/identity.md). */
export class IdentityStore {
  constructor(private readonly db: Database) {}

  // --- links between a provider's subject and a user of ours

  async linkedUser(issuer: string, subject: string): Promise<string | null> {
    const rows = await this.db.sql<{ user_id: string }>('select user_id from user_links where issuer = ? and subject = ?', [issuer, subject]);
    return rows[0]?.user_id ?? null;
  }

  async link(issuer: string, subject: string, userId: string, email: string | null): Promise<void> {
    await this.db.sql(
      `insert into user_links (issuer, subject, user_id, email) values (?, ?, ?, ?)
       on conflict (issuer, subject) do update set email = excluded.email, last_signin_at = now()`,
      [issuer, subject, userId, email],
    );
  }

  // --- sign-in records

  /** A new sign-in: the token goes to the browser (cookie) or terminal, its hash stays here. */
  async create(s: { userId: string; kind: 'browser' | 'cli'; userAgent: string | null; ip: string | null; idToken: string | null; maxMs: number }): Promise<{ id: string; token: string; csrf: string }> {
    const id = `sgn_${randomToken(20)}`;
    const token = `sgt-${randomToken(43)}`;
    const csrf = randomToken(32);
    await this.db.sql(
      `insert into signins (id, user_id, token_hash, csrf_token, kind, user_agent, ip, id_token, expires_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, now() + (? * interval '1 millisecond'))`,
      [id, s.userId, hashToken(token), csrf, s.kind, s.userAgent?.slice(0, 300) ?? null, s.ip, s.idToken, s.maxMs],
    );
    return { id, token, csrf };
  }

  /**
   * The live sign-in a token names: not revoked, before its absolute expiry and used within the
   * idle limit. Its last use is written at most once a minute (the hot path stays a read).
   */
  async live(token: string, idleMs: number): Promise<SigninRow | null> {
    const rows = await this.db.sql<SigninRow>(
      `select id, user_id, csrf_token, kind, user_agent, ip, id_token, created_at, last_seen_at, expires_at from signins
       where token_hash = ? and revoked_at is null and expires_at > now() and last_seen_at > now() - (? * interval '1 millisecond')`,
      [hashToken(token), idleMs],
    );
    const r = rows[0];
    if (!r) return null;
    if (Date.now() - new Date(r.last_seen_at).getTime() > 60_000) await this.db.sql('update signins set last_seen_at = now() where id = ?', [r.id]);
    return r;
  }

  async get(id: string): Promise<SigninRow | null> {
    const rows = await this.db.sql<SigninRow>(
      'select id, user_id, csrf_token, kind, user_agent, ip, id_token, created_at, last_seen_at, expires_at from signins where id = ? and revoked_at is null',
      [id],
    );
    return rows[0] ?? null;
  }

  /** The user's sign-ins still alive, newest first. */
  async list(userId: string, idleMs: number): Promise<SigninRow[]> {
    return this.db.sql<SigninRow>(
      `select id, user_id, csrf_token, kind, user_agent, ip, id_token, created_at, last_seen_at, expires_at from signins
       where user_id = ? and revoked_at is null and expires_at > now() and last_seen_at > now() - (? * interval '1 millisecond')
       order by created_at desc, id desc`,
      [userId, idleMs],
    );
  }

  async revoke(id: string): Promise<boolean> {
    return (await this.db.sql('update signins set revoked_at = now() where id = ? and revoked_at is null returning id', [id])).length > 0;
  }

  /** Every sign-in of a user ends (the user was disabled); answers their ids. */
  async revokeAll(userId: string): Promise<string[]> {
    const rows = await this.db.sql<{ id: string }>('update signins set revoked_at = now() where user_id = ? and revoked_at is null returning id', [userId]);
    return rows.map((r) => r.id);
  }

  // --- sign-ins under way at the provider

  async addRequest(r: SigninRequest, ttlMs: number): Promise<void> {
    await this.db.sql(
      `insert into signin_requests (id, kind, nonce, code_verifier, device_code, return_to, redirect_uri, expires_at) values (?, ?, ?, ?, ?, ?, ?, now() + (? * interval '1 millisecond'))`,
      [r.id, r.kind, r.nonce, r.code_verifier, r.device_code, r.return_to, r.redirect_uri ?? null, ttlMs],
    );
    // Old ones go as new ones come: abandoned sign-ins leave nothing behind for long.
    await this.db.sql(`delete from signin_requests where expires_at < now() - interval '1 hour'`);
  }

  /** A browser request is used once: taken (deleted) by the callback, so a replayed callback finds nothing. */
  async takeRequest(id: string): Promise<SigninRequest | null> {
    const rows = await this.db.sql<SigninRequest>(
      `delete from signin_requests where id = ? and kind = 'browser' and expires_at > now() returning id, kind, nonce, code_verifier, device_code, return_to`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** A terminal's browser sign-in is used once too: taken by the first exchange, approved or refused. */
  async takeLoopbackRequest(id: string): Promise<SigninRequest | null> {
    const rows = await this.db.sql<SigninRequest>(
      `delete from signin_requests where id = ? and kind = 'loopback' and expires_at > now() returning id, kind, nonce, code_verifier, device_code, return_to, redirect_uri`,
      [id],
    );
    return rows[0] ?? null;
  }

  async deviceRequest(id: string): Promise<SigninRequest | null> {
    const rows = await this.db.sql<SigninRequest>(
      `select id, kind, nonce, code_verifier, device_code, return_to from signin_requests where id = ? and kind = 'device' and expires_at > now()`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Taken once the device grant answered (approved or refused): a second poll finds nothing. */
  async takeDeviceRequest(id: string): Promise<boolean> {
    return (await this.db.sql(`delete from signin_requests where id = ? and kind = 'device' returning id`, [id])).length > 0;
  }

  // --- audit

  async audit(action: AuditAction, userId: string | null, actorId: string | null, detail: Record<string, unknown> = {}): Promise<void> {
    await this.db.sql('insert into identity_audit (id, action, user_id, actor_id, detail) values (?, ?, ?, ?, ?::jsonb)', [
      `iau_${randomToken(20)}`,
      action,
      userId,
      actorId,
      JSON.stringify(detail),
    ]);
  }

  async auditList(q: { userId?: string; action?: string; limit: number; offset: number }): Promise<{ items: AuditRecord[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.userId) {
      where.push('user_id = ?');
      params.push(q.userId);
    }
    if (q.action) {
      where.push('action = ?');
      params.push(q.action);
    }
    const cond = where.length ? `where ${where.join(' and ')}` : '';
    const [count] = await this.db.sql<{ n: string }>(`select count(*) as n from identity_audit ${cond}`, params);
    const rows = await this.db.sql<AuditRecord & { at: Date }>(
      `select id, at, action, user_id, actor_id, detail from identity_audit ${cond} order by at desc, id desc limit ? offset ?`,
      [...params, q.limit, q.offset],
    );
    return { items: rows.map((r) => ({ ...r, at: iso(r.at) })), total: Number(count.n) };
  }
}
