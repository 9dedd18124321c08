/**
 * The sign-in settings (docs/identity.md): the OpenID Connect provider, how its claim maps to roles,
 * the sign-in lifetimes, and whether keys may still sign in to the console.
 */

export type Role = 'admin' | 'member' | 'viewer';
export const ROLES: readonly Role[] = ['admin', 'member', 'viewer'];

/**
 * Which values of one claim give which role. The first role (admin, then member, then viewer) with
 * a value the user's claim holds wins; `*` matches anyone who signed in.
 */
export interface RoleMap {
  claim: string;
  admin: string[];
  member: string[];
  viewer: string[];
}

/** Without AGENTSVC_OIDC_ROLES everyone who signs in is a member, as every user was before roles. */
export const DEFAULT_ROLE_MAP: RoleMap = { claim: 'groups', admin: [], member: ['*'], viewer: [] };

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The name on the console's button ("Sign in with <name>"). */
  name: string;
  scopes: string;
  roles: RoleMap;
}

export interface IdentityConfig {
  oidc?: OidcSettings;
  /** False: the console offers only the provider (keys still work for scripts and the CLI). */
  keySignin: boolean;
  idleHours: number;
  maxDays: number;
  /** Believe X-Forwarded-Proto / X-Forwarded-Host from the reverse proxy in front. */
  trustProxy: boolean;
}

const strings = (v: unknown, where: string): string[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || !x)) throw new Error(`${where} must be a list of non-empty strings`);
  return v as string[];
};

/**
 * AGENTSVC_OIDC_ROLES: JSON `{"claim": "groups", "admin": ["agentsvc-admins"], "member": ["staff"],
 * "viewer": ["*"]}` (an object in config.json), or the short form `groups:agentsvc-admins=admin,staff=member,*=viewer`.
 */
export function parseRoleMap(v: unknown): RoleMap {
  if (v === undefined || v === null || v === '') return DEFAULT_ROLE_MAP;
  let o: unknown = v;
  if (typeof v === 'string') {
    const text = v.trim();
    if (text.startsWith('{')) {
      try {
        o = JSON.parse(text);
      } catch (e) {
        throw new Error(`not valid JSON (${(e as Error).message})`);
      }
    } else return parseShort(text);
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw new Error('must be a JSON object {claim, admin, member, viewer} or claim:value=role,...');
  const r = o as Record<string, unknown>;
  const unknown = Object.keys(r).filter((k) => !['claim', ...ROLES].includes(k));
  if (unknown.length) throw new Error(`unknown key ${unknown[0]} (allowed: claim, admin, member, viewer)`);
  const claim = r.claim ?? 'groups';
  if (typeof claim !== 'string' || !/^[A-Za-z0-9_.:/-]{1,200}$/.test(claim)) throw new Error('claim must be a claim name such as groups or roles');
  const map = { claim, admin: strings(r.admin, 'admin'), member: strings(r.member, 'member'), viewer: strings(r.viewer, 'viewer') };
  if (!map.admin.length && !map.member.length && !map.viewer.length) throw new Error('maps no value to any role: nobody could sign in');
  return map;
}

function parseShort(text: string): RoleMap {
  const colon = text.indexOf(':');
  if (colon < 1) throw new Error('short form is claim:value=role,value=role (e.g. groups:admins=admin,*=viewer)');
  const map: RoleMap = { claim: text.slice(0, colon), admin: [], member: [], viewer: [] };
  for (const pair of text.slice(colon + 1).split(',')) {
    const eq = pair.lastIndexOf('=');
    const value = pair.slice(0, eq).trim();
    const role = pair.slice(eq + 1).trim() as Role;
    if (eq < 1 || !value || !ROLES.includes(role)) throw new Error(`"${pair}" is not value=admin|member|viewer`);
    map[role].push(value);
  }
  return map;
}

/** The role a set of claims gives, or null when it matches none (the sign-in is refused). */
export function roleFor(map: RoleMap, claims: Record<string, unknown>): Role | null {
  const raw = claims[map.claim];
  const values = new Set((Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw]).map(String));
  for (const role of ROLES) if (map[role].some((v) => v === '*' || values.has(v))) return role;
  return null;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Checks the provider settings together; `fail(setting, message)` throws the ConfigError naming it. */
export function oidcSettings(
  v: { issuer?: string; clientId?: string; clientSecret?: string; name?: string; scopes: string; roles: RoleMap },
  fail: (setting: string, message: string) => never,
): OidcSettings | undefined {
  if (!v.issuer) {
    if (v.clientId || v.clientSecret) fail('AGENTSVC_OIDC_ISSUER', 'required when AGENTSVC_OIDC_CLIENT_ID or AGENTSVC_OIDC_CLIENT_SECRET is set');
    return undefined;
  }
  const u = new URL(v.issuer);
  // Tokens and the client secret travel to the issuer: plain http only to this machine (a test provider).
  if (u.protocol !== 'https:' && !LOOPBACK.has(u.hostname)) fail('AGENTSVC_OIDC_ISSUER', 'must be an https URL (http only on loopback)');
  if (!v.clientId) fail('AGENTSVC_OIDC_CLIENT_ID', 'required when AGENTSVC_OIDC_ISSUER is set');
  if (!v.clientSecret) fail('AGENTSVC_OIDC_CLIENT_SECRET', 'required when AGENTSVC_OIDC_ISSUER is set');
  if (!v.scopes.split(/\s+/).includes('openid')) fail('AGENTSVC_OIDC_SCOPES', 'must include openid');
  return { issuer: v.issuer, clientId: v.clientId, clientSecret: v.clientSecret, name: v.name || u.hostname, scopes: v.scopes, roles: v.roles };
}
