import { randomToken } from '../../../platform/lib/ids.js';
import type { UserService } from '../../users/service.js';

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

export interface SsoUser {
  sub: string;
  email?: string | null;
  name?: string | null;
}

export interface TokenStatusItem {
  sub: string;
  email: string | null;
  ok: boolean;
  changed: boolean;
  message: string;
}

/** A username from the SSO identity: the allowed characters of name, e-mail or sub. */
function usernameFor(u: SsoUser): string {
  for (const raw of [u.name, u.email, u.sub]) {
    const s = (raw ?? '').replace(/\s+/g, '.').replace(/[^A-Za-z0-9_.@-]/g, '').slice(0, 56);
    if (s) return s;
  }
  return `sso-${randomToken(8)}`;
}

/**
 * Production users (docs/solutions-and-admin.md): every user with e-mail and last activity (the newest use of any
 * of their keys), and `token-status`, which makes sure each SSO subject has a user and an active
 * key named `sso`.
 */
export class ProdUsers {
  constructor(private readonly users: UserService) {}

  async list() {
    const rows = await this.users.withActivity();
    return rows.map((r) => ({ id: r.id, username: r.username, email: r.email, created_at: iso(r.created_at)!, last_seen_at: iso(r.last_seen_at) }));
  }

  private async ensureOne(u: SsoUser): Promise<TokenStatusItem> {
    const email = u.email ?? null;
    const changes: string[] = [];
    let user = await this.users.bySsoSub(u.sub);
    if (!user) {
      const base = usernameFor(u);
      for (let i = 0; !user && i < 5; i++) {
        const name = i === 0 ? base : `${base.slice(0, 56)}-${randomToken(6)}`;
        user = await this.users.createSso(`user_${randomToken(20)}`, name, email, u.sub);
        // Lost a race on this sub with another request: take theirs.
        user ??= await this.users.bySsoSub(u.sub);
      }
      if (!user) return { sub: u.sub, email, ok: false, changed: false, message: 'could not find a free username for this user' };
      changes.push('user created');
    } else if (email != null && user.email !== email) {
      await this.users.setEmail(user.id, email);
      changes.push('email updated');
    }
    if (!(await this.users.hasKeyNamed(user.id, 'sso'))) {
      await this.users.createKey(user.id, 'sso');
      changes.push('sso key created');
    }
    return { sub: u.sub, email, ok: true, changed: changes.length > 0, message: changes.length ? changes.join('; ') : 'up to date' };
  }

  async tokenStatus(list: SsoUser[]): Promise<TokenStatusItem[]> {
    const out: TokenStatusItem[] = [];
    for (const u of list) {
      try {
        out.push(await this.ensureOne(u));
      } catch (e) {
        out.push({ sub: u.sub, email: u.email ?? null, ok: false, changed: false, message: (e as Error).message });
      }
    }
    return out;
  }
}
