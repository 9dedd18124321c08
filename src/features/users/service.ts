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

  constructor(private readonly em: () => EntityManager) {}

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
