import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey, User } from '../../platform/db/entities.js';
import { newId } from '../../platform/lib/ids.js';
import { Errors } from '../../platform/server/errors.js';
import { generateKey, hashKey, looksLikeKey, mask } from './keys.js';

export interface ApiKeyPublic {
  id: string;
  name: string;
  masked: string;
  plaintext: string | null;
  created_at: string;
  last_used_at: string | null;
}

export interface AuthIdentity {
  user: User;
  keyId: string;
}

/** Postgres channel on which key deletions are announced, so every process drops its sockets. */
export const KEY_REVOKED_CHANNEL = 'agentsvc_key_revoked';
/**
 * Read access that may have shrunk, announced on the same channel (docs/identity.md, "When read
 * access goes"). Unlike a key, a sign-in or `user:<id>`, it closes no socket: every node checks
 * again the subscriptions it names and ends those no longer readable. `access:<user id>`: what
 * that user may read (left or removed from a team workspace, or it was deleted);
 * `access:session:<session id>`: the session was deleted; `access:*`: anything (the listener
 * reconnected and may have missed announcements).
 */
export const ACCESS = {
  user: (userId: string) => `access:${userId}`,
  session: (sessionId: string) => `access:session:${sessionId}`,
  all: 'access:*',
} as const;

/** Which subscriptions an announcement names: a user's, a session's, every one (`{}`); null when it is no access change. */
export function accessChange(what: string): { userId?: string; sessionId?: string } | null {
  if (!what.startsWith('access:')) return null;
  const rest = what.slice('access:'.length);
  if (rest === '*') return {};
  return rest.startsWith('session:') ? { sessionId: rest.slice('session:'.length) } : { userId: rest };
}

/** Serialises changes to the admin set across processes (transaction-scoped advisory lock). */
const ADMIN_LOCK = 7_316_001;

export function toPublic(k: ApiKey, plaintext: string | null = null): ApiKeyPublic {
  return {
    id: k.id,
    name: k.name,
    masked: mask(k.last4),
    plaintext,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt ? k.lastUsedAt.toISOString() : null,
  };
}

export function validateKeyName(name: unknown): string {
  if (typeof name !== 'string' || name.length < 1 || name.length > 50) {
    throw Errors.invalid(['body', 'name'], 'name must be a string of 1-50 characters');
  }
  return name;
}

export class UserService {
  /** last_used_at is written at most once a minute per key: auth stays read-only on the hot path. */
  private lastTouched = new Map<string, number>();
  /** In-process listeners of revocations heard from any node (the one database listener fans out here). */
  private revokedListeners = new Set<(id: string) => void>();

  constructor(private readonly em: () => EntityManager) {}

  /**
   * Called with the id of every revoked key, sign-in (`sgn_…`) or disabled user (`user:<id>`), and
   * with every ACCESS change, whichever node announced it; answers the unsubscribe. One database
   * listener per node serves all.
   */
  onRevoked(listener: (id: string) => void): () => void {
    this.revokedListeners.add(listener);
    return () => void this.revokedListeners.delete(listener);
  }

  /** The revocation listener hands each id it hears (from any node) here. */
  heardRevoked(id: string): void {
    for (const l of this.revokedListeners) l(id);
  }

  async ensureUser(username: string, opts: { admin?: boolean } = {}): Promise<{ user: User; created: boolean }> {
    if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(username)) throw Errors.invalid(['user'], 'username: 1-64 of A-Z a-z 0-9 _ . @ -');
    const em = this.em();
    const existing = await em.findOne(User, { username });
    if (existing) return { user: existing, created: false };
    const user = em.create(User, { id: newId('user'), username, isAdmin: !!opts.admin, role: opts.admin ? 'admin' : 'member', disabled: false, avatarUrl: null, createdAt: new Date() });
    try {
      await em.persistAndFlush(user);
      return { user, created: true };
    } catch (e) {
      // Lost a race with another process creating the same user: use theirs.
      const again = await this.em().findOne(User, { username });
      if (again) return { user: again, created: false };
      throw e;
    }
  }

  /** A new user of this role, or null when the name is taken (sign-in picks another: src/features/identity). */
  async createUser(username: string, role: 'admin' | 'member' | 'viewer'): Promise<User | null> {
    const em = this.em();
    const user = em.create(User, { id: newId('user'), username, isAdmin: role === 'admin', role, disabled: false, avatarUrl: null, createdAt: new Date() });
    const rows = await em.getConnection().execute<{ id: string }[]>(
      `insert into users (id, username, is_admin, role, disabled, created_at) values (?, ?, ?, ?, false, ?) on conflict (username) do nothing returning id`,
      [user.id, username, role === 'admin', role, user.createdAt],
    );
    return rows.length ? user : null;
  }

  async getUser(id: string): Promise<User | null> {
    return this.em().findOne(User, { id });
  }

  /** Role and `is_admin` together: `is_admin` keeps meaning "admin" for everything that reads it. */
  async setRole(id: string, role: 'admin' | 'member' | 'viewer'): Promise<void> {
    await this.em().getConnection().execute('update users set role = ?, is_admin = ? where id = ?', [role, role === 'admin', id]);
  }

  /** Disabling announces it like a key deletion, so every process cuts the user's sockets at once. */
  async setDisabled(id: string, disabled: boolean): Promise<void> {
    await this.em().transactional(async (tx) => {
      await tx.getConnection().execute('update users set disabled = ? where id = ?', [disabled, id]);
      if (disabled) await tx.getConnection().execute(`select pg_notify(?, ?)`, [KEY_REVOKED_CHANNEL, `user:${id}`]);
    });
  }

  /** A new name when it is free; false when another user has it. */
  async rename(id: string, username: string): Promise<boolean> {
    const rows = await this.em()
      .getConnection()
      .execute<{ id: string }[]>('update users set username = ? where id = ? and not exists (select 1 from users where username = ? and id <> ?) returning id', [username, id, username, id]);
    return rows.length > 0;
  }

  /** Announce that what the id names (a sign-in's id, or `user:<id>`) is gone: sockets using it close on every node. */
  async announceRevoked(what: string): Promise<void> {
    await this.em().getConnection().execute(`select pg_notify(?, ?)`, [KEY_REVOKED_CHANNEL, what]);
  }

  /** Announce ACCESS changes (after the change is committed): every node checks those subscriptions again. */
  async announceAccess(changes: string[]): Promise<void> {
    for (const what of new Set(changes)) await this.announceRevoked(what);
  }

  async isAdmin(userId: string): Promise<boolean> {
    return (await this.em().getConnection().execute<{ is_admin: boolean }[]>('select is_admin from users where id = ?', [userId]))[0]?.is_admin === true;
  }

  async exists(userId: string): Promise<boolean> {
    return (await this.em().getConnection().execute('select 1 from users where id = ?', [userId])).length > 0;
  }

  /** Every admin, oldest first. */
  async admins(): Promise<{ id: string; username: string; created_at: Date }[]> {
    return this.em().getConnection().execute('select id, username, created_at from users where is_admin order by created_at, id');
  }

  /** False when there is no such user. */
  async grantAdmin(userId: string): Promise<boolean> {
    return (await this.em().getConnection().execute('update users set is_admin = true where id = ? returning id', [userId])).length > 0;
  }

  /**
   * Takes admin away unless the user is the last admin. Serialised across processes by a
   * transaction-scoped advisory lock, so two concurrent removals never leave none.
   */
  async revokeAdmin(userId: string): Promise<'revoked' | 'not_admin' | 'no_user' | 'last_admin'> {
    return this.em().transactional(async (tx) => {
      await tx.execute('select pg_advisory_xact_lock(?)', [ADMIN_LOCK]);
      const u = await tx.execute<{ is_admin: boolean }[]>('select is_admin from users where id = ?', [userId]);
      if (!u.length) return 'no_user';
      if (!u[0].is_admin) return 'not_admin';
      const [{ n }] = await tx.execute<{ n: number }[]>('select count(*)::int as n from users where is_admin');
      if (n <= 1) return 'last_admin';
      await tx.execute('update users set is_admin = false where id = ?', [userId]);
      return 'revoked';
    });
  }

  /** Every user with e-mail and last activity (the newest use of any of their keys), oldest first. */
  async withActivity(): Promise<{ id: string; username: string; email: string | null; created_at: Date; last_seen_at: Date | null }[]> {
    return this.em().getConnection().execute(
      `select u.id, u.username, u.email, u.created_at, (select max(k.last_used_at) from api_keys k where k.user_id = u.id) as last_seen_at
       from users u order by u.created_at, u.id`,
    );
  }

  /** The user signed in from this SSO subject, if any. */
  async bySsoSub(sub: string): Promise<{ id: string; email: string | null } | undefined> {
    return (await this.em().getConnection().execute<{ id: string; email: string | null }[]>('select id, email from users where sso_sub = ?', [sub]))[0];
  }

  /** A new user for an SSO subject; undefined when the name or the subject is taken. */
  async createSso(id: string, username: string, email: string | null, sub: string): Promise<{ id: string; email: string | null } | undefined> {
    const rows = await this.em().getConnection().execute<{ id: string; email: string | null }[]>(
      `insert into users (id, username, is_admin, avatar_url, created_at, email, sso_sub) values (?, ?, false, null, now(), ?, ?)
       on conflict do nothing returning id, email`,
      [id, username, email, sub],
    );
    return rows[0];
  }

  async setEmail(userId: string, email: string | null): Promise<void> {
    await this.em().getConnection().execute('update users set email = ? where id = ?', [email, userId]);
  }

  async hasKeyNamed(userId: string, name: string): Promise<boolean> {
    return (await this.em().getConnection().execute('select 1 from api_keys where user_id = ? and name = ?', [userId, name])).length > 0;
  }

  /** The names of these users, by id (unknown ids are absent). */
  async usernames(ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const rows = await this.em().find(User, { id: { $in: [...new Set(ids)] } }, { fields: ['id', 'username'] });
    return new Map(rows.map((u) => [u.id, u.username]));
  }

  async findUser(username: string): Promise<User | null> {
    return this.em().findOne(User, { username });
  }

  async createKey(userId: string, name: string): Promise<{ key: ApiKeyPublic; plaintext: string }> {
    validateKeyName(name);
    const plaintext = generateKey();
    const em = this.em();
    const key = em.create(ApiKey, {
      id: newId('key'),
      userId,
      name,
      keyHash: hashKey(plaintext),
      last4: plaintext.slice(-4),
      createdAt: new Date(),
      lastUsedAt: null,
    });
    await em.persistAndFlush(key);
    return { key: toPublic(key, plaintext), plaintext };
  }

  async listKeys(userId: string): Promise<ApiKeyPublic[]> {
    const keys = await this.em().find(ApiKey, { userId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return keys.map((k) => toPublic(k));
  }

  private async ownKey(em: EntityManager, userId: string, keyId: string): Promise<ApiKey> {
    const key = await em.findOne(ApiKey, { id: keyId, userId });
    if (!key) throw Errors.notFound('API key');
    return key;
  }

  async getKey(userId: string, keyId: string): Promise<ApiKeyPublic> {
    return toPublic(await this.ownKey(this.em(), userId, keyId));
  }

  async renameKey(userId: string, keyId: string, name: string): Promise<ApiKeyPublic> {
    validateKeyName(name);
    const em = this.em();
    const key = await this.ownKey(em, userId, keyId);
    key.name = name;
    await em.flush();
    return toPublic(key);
  }

  async deleteKey(userId: string, keyId: string): Promise<void> {
    const em = this.em();
    const key = await this.ownKey(em, userId, keyId);
    await em.transactional(async (tx) => {
      await tx.nativeDelete(ApiKey, { id: key.id });
      await tx.getConnection().execute(`select pg_notify(?, ?)`, [KEY_REVOKED_CHANNEL, key.id]);
    });
  }

  /** Which of these key ids still exist (after a listener outage, to find deletions it missed). */
  async existingKeyIds(ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.em().find(ApiKey, { id: { $in: ids } }, { fields: ['id'] });
    return new Set(rows.map((k) => k.id));
  }

  async authenticate(plaintext: string | undefined): Promise<AuthIdentity | null> {
    if (!plaintext || !looksLikeKey(plaintext)) return null;
    const em = this.em();
    const key = await em.findOne(ApiKey, { keyHash: hashKey(plaintext) });
    if (!key) return null;
    const user = await em.findOne(User, { id: key.userId });
    if (!user || user.disabled) return null;
    const now = Date.now();
    if (now - (this.lastTouched.get(key.id) ?? 0) > 60_000) {
      this.lastTouched.set(key.id, now);
      await em.nativeUpdate(ApiKey, { id: key.id }, { lastUsedAt: new Date(now) });
    }
    return { user, keyId: key.id };
  }
}
