import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { type IdentityConfig, type Role, roleFor } from '../../platform/config/identity.js';
import type { User } from '../../platform/db/entities.js';
import type { Authenticator, Identity } from '../../platform/server/auth.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import type { Admin } from '../admin/service.js';
import type { UserService } from '../users/service.js';
import type { OidcProvider, SignedIn } from './provider.js';
import { routeDecision, ROUTE_ROLES } from './role-table.js';
import { type IdentityStore, type SigninRow, toPublic } from './store.js';

export const COOKIE = 'agentsvc_signin';

/** The role a user acts with: `is_admin` decides admin (older code grants it), else the stored role. */
export function roleOf(u: Pick<User, 'isAdmin' | 'role'>): Role {
  return u.isAdmin ? 'admin' : u.role === 'viewer' ? 'viewer' : 'member';
}

export const forbiddenRole = (role: Role, what: string) => new AppError(403, 'FORBIDDEN_ROLE', `a ${role} may not ${what}`);

/** One cookie's value from a Cookie header (the only cookie the service reads: no library needed for it). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The service's own origin as the request reached it (the proxy's view when AGENTSVC_TRUST_PROXY is set). */
export function ownOrigin(headers: IncomingHttpHeaders, c: { trustProxy: boolean; publicUrl?: string }, encrypted: boolean): string {
  if (c.publicUrl) return new URL(c.publicUrl).origin;
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim();
  const proto = (c.trustProxy && first(headers['x-forwarded-proto'])) || (encrypted ? 'https' : 'http');
  const host = (c.trustProxy && first(headers['x-forwarded-host'])) || headers.host || 'localhost';
  return `${proto}://${host}`;
}

/** Why a sign-in was refused: shown on the page the browser lands on, and audited. */
export class SigninRefused extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Sign-ins (browser cookie, terminal token), users from the provider, roles and disabling
 * (docs/identity.md). It is also the edge's Authenticator: keys as before, then sign-ins.
 */
export class Identities implements Authenticator {
  constructor(
    readonly store: IdentityStore,
    private readonly users: UserService,
    private readonly admin: Admin,
    readonly config: IdentityConfig & { publicUrl?: string },
    readonly provider: OidcProvider | null,
  ) {}

  get idleMs() {
    return this.config.idleHours * 3600_000;
  }
  get maxMs() {
    return this.config.maxDays * 86400_000;
  }

  // --- Authenticator

  /** A bearer: an API key, or a terminal's sign-in token (`sgt-`). A disabled user's are refused. */
  async authenticate(token: string | undefined): Promise<Identity | null> {
    if (!token) return null;
    if (!token.startsWith('sgt-')) {
      const id = await this.users.authenticate(token);
      return id ? { ...id, via: 'key' } : null;
    }
    const s = await this.live(token);
    return s && s.row.kind === 'cli' ? { user: s.user, keyId: s.row.id, via: 'signin-token' } : null;
  }

  async cookie(headers: IncomingHttpHeaders, use: 'http' | 'socket'): Promise<Identity | null> {
    const token = cookieValue(headers.cookie, COOKIE);
    if (!token) return null;
    if (use === 'socket') {
      // A page of another site can open a socket to us with our cookie attached: only our own pages may.
      const origin = headers.origin;
      const own = ownOrigin(headers, this.config, false);
      const ownTls = ownOrigin(headers, this.config, true);
      if (!origin || (origin !== own && origin !== ownTls)) throw new AppError(403, 'ORIGIN_REFUSED', 'a socket signed in by cookie must come from the service\'s own pages (Origin)');
    }
    const s = await this.live(token);
    return s && s.row.kind === 'browser' ? { user: s.user, keyId: s.row.id, via: 'cookie', csrf: s.row.csrf_token } : null;
  }

  private async live(token: string): Promise<{ row: SigninRow; user: User } | null> {
    const row = await this.store.live(token, this.idleMs);
    if (!row) return null;
    const user = await this.users.getUser(row.user_id);
    if (!user || user.disabled) return null;
    return { row, user };
  }

  allow(req: FastifyRequest, identity: Identity): void {
    const role = roleOf(identity.user);
    if (role === 'admin') return;
    const decision = routeDecision(req.routeOptions.method as string, req.routeOptions.url ?? '');
    if (decision === 'public' || decision?.includes(role)) return;
    // Admin-only routes keep the refusal they always had; the viewer's is FORBIDDEN_ROLE.
    if (decision && !decision.includes('member')) throw Errors.forbidden('admins only');
    throw forbiddenRole(role, `${req.method} ${req.routeOptions.url}`);
  }

  rolesOf(method: string, url: string) {
    return ROUTE_ROLES[`${method} ${url}`];
  }

  // --- signing in

  /**
   * The provider vouched for someone: find or create the user linked to (issuer, sub), apply the
   * role mapping, and open a sign-in. Throws SigninRefused (audited) when they may not.
   */
  async signIn(who: SignedIn, kind: 'browser' | 'cli', meta: { userAgent: string | null; ip: string | null }): Promise<{ user: User; token: string; csrf: string; id: string }> {
    const oidc = this.provider?.settings;
    if (!oidc) throw new SigninRefused(404, 'not_configured', 'sign-in with a provider is not configured');
    const role = roleFor(oidc.roles, who.claims);
    const email = typeof who.claims.email === 'string' ? who.claims.email : null;
    const name = usernameFrom(who.claims, who.subject);
    let userId = await this.store.linkedUser(oidc.issuer, who.subject);
    if (!role) {
      await this.store.audit('signin_failed', userId, null, { reason: 'no_role', subject: who.subject, claim: oidc.roles.claim });
      throw new SigninRefused(403, 'no_role', `Your account at ${oidc.name} is in no group that may use this service. Ask an administrator to add you.`);
    }
    let user = userId ? await this.users.getUser(userId) : null;
    if (!user) {
      user = await this.createUser(name, role);
      userId = user.id;
      await this.store.link(oidc.issuer, who.subject, user.id, email);
      await this.store.audit('role_changed', user.id, null, { from: null, to: role, by: 'provider' });
    } else {
      await this.store.link(oidc.issuer, who.subject, user.id, email);
      if (user.disabled) {
        await this.store.audit('signin_failed', user.id, null, { reason: 'disabled' });
        throw new SigninRefused(403, 'disabled', 'This account is disabled. Ask an administrator to enable it.');
      }
      if (name !== user.username && (await this.users.rename(user.id, name))) user.username = name;
      const before = roleOf(user);
      if (before !== role) {
        // The last admin stays an admin (LAST_ADMIN), whatever the provider says.
        if (before === 'admin') await this.admin.revokeAdmin(user.id).catch(() => {});
        const now = (await this.users.getUser(user.id)) ?? user;
        if (!(before === 'admin' && now.isAdmin)) {
          await this.users.setRole(user.id, role);
          await this.store.audit('role_changed', user.id, null, { from: before, to: role, by: 'provider' });
          user = (await this.users.getUser(user.id)) ?? user;
        }
      }
    }
    const s = await this.store.create({ userId: user.id, kind, userAgent: meta.userAgent, ip: meta.ip, idToken: kind === 'browser' ? who.idToken : null, maxMs: this.maxMs });
    await this.store.audit('signin', user.id, user.id, { kind, signin_id: s.id, ip: meta.ip });
    return { user, ...s };
  }

  private async createUser(name: string, role: Role): Promise<User> {
    // A name already taken is never joined to (that would hand an existing account to the provider's user).
    for (let i = 0; i < 5; i++) {
      const candidate = i === 0 ? name : `${name.slice(0, 58)}-${Math.random().toString(36).slice(2, 7)}`;
      const u = await this.users.createUser(candidate, role);
      if (u) return u;
    }
    throw new Error('could not find a free user name');
  }

  async auditFailure(reason: string, detail: Record<string, unknown> = {}) {
    await this.store.audit('signin_failed', null, null, { reason, ...detail });
  }

  // --- signed-in devices

  async list(userId: string, currentId: string | null) {
    return (await this.store.list(userId, this.idleMs)).map((r) => ({ ...toPublic(r), current: r.id === currentId }));
  }

  /** Ends one sign-in (the caller's own, or anyone's for an admin); its sockets close on every node. */
  async revoke(caller: User, signinId: string): Promise<void> {
    const row = await this.store.get(signinId);
    if (!row || (row.user_id !== caller.id && roleOf(caller) !== 'admin')) throw Errors.notFound('sign-in');
    await this.store.revoke(signinId);
    await this.users.announceRevoked(signinId);
    await this.store.audit('signout', row.user_id, caller.id, { signin_id: signinId, by: row.user_id === caller.id ? 'user' : 'admin' });
  }

  /** Sign-out: the sign-in ends here, and the URL that ends it at the provider when it offers one. */
  async signOut(identity: Identity, after: string): Promise<string | null> {
    if (identity.via !== 'cookie' && identity.via !== 'signin-token') return null;
    const row = await this.store.get(identity.keyId);
    await this.store.revoke(identity.keyId);
    await this.users.announceRevoked(identity.keyId);
    await this.store.audit('signout', identity.user.id, identity.user.id, { signin_id: identity.keyId, by: 'user' });
    return row && this.provider ? this.provider.endSessionUrl(row.id_token, after) : null;
  }

  // --- admin

  async setUser(actor: User, userId: string, change: { role?: Role; disabled?: boolean }) {
    const user = await this.users.getUser(userId);
    if (!user) throw Errors.notFound('user');
    const before = roleOf(user);
    if (change.role && change.role !== before) {
      if (before === 'admin') await this.admin.revokeAdmin(userId);
      await this.users.setRole(userId, change.role);
      await this.store.audit('role_changed', userId, actor.id, { from: before, to: change.role, by: 'admin' });
      // Open sockets carry the role they connected with: they reconnect with the new one.
      await this.users.announceRevoked(`user:${userId}`);
    }
    if (change.disabled !== undefined && change.disabled !== user.disabled) {
      if (change.disabled && userId === actor.id) throw Errors.conflict('SELF_DISABLE', 'an admin cannot disable themselves');
      if (change.disabled && roleOf((await this.users.getUser(userId)) ?? user) === 'admin' && (await this.admin.admins()).length <= 1) {
        throw Errors.conflict('LAST_ADMIN', 'this is the last admin; make another user admin first');
      }
      await this.store.revokeAll(userId);
      await this.users.setDisabled(userId, change.disabled);
      await this.store.audit(change.disabled ? 'user_disabled' : 'user_enabled', userId, actor.id, {});
    }
    const after = (await this.users.getUser(userId)) ?? user;
    return { id: after.id, username: after.username, role: roleOf(after), disabled: after.disabled };
  }

  auditList(q: { userId?: string; action?: string; limit: number; offset: number }) {
    return this.store.auditList(q);
  }
}

/** `preferred_username`, else the e-mail, else the subject; made to fit the user name rules. */
export function usernameFrom(claims: Record<string, unknown>, subject: string): string {
  const raw = [claims.preferred_username, claims.email, subject].find((v) => typeof v === 'string' && v.trim()) as string;
  const clean = raw.replace(/[^A-Za-z0-9_.@-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64);
  return clean || `user-${subject.slice(0, 40).replace(/[^A-Za-z0-9]/g, '')}`;
}
