import type { z } from 'zod';
import type { AdminItem, ProdUser, TokenStatus } from '../../src/features/admin/schemas.js';
import type { SessionDetail as SessionDetailSchema, SessionPublic } from '../../src/core/sessions/schemas.js';
import type { ApiKeyPublic, KeyCreated, Me as MeSchema } from '../../src/features/users/schemas.js';
import type { Turn } from '../../src/core/conversation/turns.js';
import type { SigninPublic } from '../../src/features/identity/store.js';
import type { CredentialPublic } from '../../src/features/model-keys/service.js';

/**
 * The REST half of the public interface. The key lives in the tab's sessionStorage
 * (docs/console.md): it is gone when the tab closes and never shared with other tabs.
 */

export type Session = z.output<typeof SessionPublic>;
/** GET /api/sessions/{id}: `viewer_role` says whether the caller owns it or reads it as a teammate. */
export type SessionDetail = z.output<typeof SessionDetailSchema>;
export type ApiKey = z.output<typeof ApiKeyPublic>;
export type User = z.output<typeof ProdUser>;
export type Admin = z.output<typeof AdminItem>;
export type Me = z.output<typeof MeSchema>;
export type { Turn };
export interface SessionList {
  items: Session[];
  total: number;
  limit: number;
  offset: number;
}
export interface Models {
  default: string;
  models: { id: string; name: string }[];
}
export interface Entry {
  name: string;
  type: 'file' | 'directory';
  size?: number;
}
export interface Checkpoint {
  checkpoint_id: string;
  turn_id: string;
  created_at: string;
  branch_id: string;
  label: string;
  files: number;
}
export interface ShareLink {
  token: string;
  url: string;
  expires_at: string;
}

/** One sign-in of the caller's (GET /api/auth/signins): a browser's cookie or a terminal's token. */
export type Signin = SigninPublic & { current: boolean };
/** A model entry that takes a personal key, with the caller's key masked (GET /api/me/credentials). */
export type ModelKey = CredentialPublic;

const KEY = 'agentsvc.key';

export const keyStore = {
  get: (): string | null => sessionStorage.getItem(KEY),
  set: (k: string) => sessionStorage.setItem(KEY, k),
  clear: () => sessionStorage.removeItem(KEY),
};

/**
 * The CSRF token of a cookie sign-in (`csrf_token` of GET /api/auth/me), sent as X-CSRF-Token with
 * every change (docs/identity.md); kept in memory only. Null with a key sign-in.
 */
let csrf: string | null = null;
export const csrfStore = {
  get: () => csrf,
  set: (t: string | null) => {
    csrf = t;
  },
};
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A refused request, carrying the error body (docs/errors.md): `detail` is what the person reads. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** The `detail` of an error (docs/errors.md) as one line: a string, or the list of field problems of a 422. */
export function detailText(detail: unknown): string {
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d) => {
        if (typeof d === 'string') return d;
        const o = d as { loc?: unknown[]; path?: unknown[]; field?: string; msg?: string; message?: string };
        const where = o.field ?? (o.loc ?? o.path ?? []).join('.');
        return `${where ? `${where}: ` : ''}${o.msg ?? o.message ?? JSON.stringify(d)}`;
      })
      .join('; ');
  }
  return 'the service refused the request';
}

/** Path segments of a workspace path, each encoded (a name may hold `#`, `?`, spaces). */
export function encodePath(path: string): string {
  return path
    .split('/')
    .filter(Boolean)
    .map(encodeURIComponent)
    .join('/');
}

export async function request(path: string, init: RequestInit & { json?: unknown; key?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const key = init.key ?? keyStore.get();
  if (key) headers.set('authorization', `Bearer ${key}`);
  else if (csrf && !SAFE_METHODS.has((init.method ?? 'GET').toUpperCase())) headers.set('x-csrf-token', csrf);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers, body });
  } catch {
    throw new ApiError(0, 'NETWORK', 'the service did not answer (is it running?)');
  }
  if (res.ok) return res;
  let code = 'HTTP_' + res.status;
  let detail = `${res.status} ${res.statusText}`;
  try {
    const b = (await res.json()) as { code?: string; detail?: unknown };
    if (b.code) code = b.code;
    if (b.detail !== undefined) detail = detailText(b.detail);
  } catch {
    // not a JSON body: the status line is all there is
  }
  if (res.status === 403 && code === 'FORBIDDEN_ROLE') window.dispatchEvent(new CustomEvent('agentsvc:role-refused', { detail }));
  if (res.status === 401 && !init.key) window.dispatchEvent(new CustomEvent('agentsvc:signed-out', { detail }));
  throw new ApiError(res.status, code, detail);
}

export async function api<T>(path: string, init: RequestInit & { json?: unknown; key?: string } = {}): Promise<T> {
  const res = await request(path, init);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

const sid = (id: string) => `/api/sessions/${encodeURIComponent(id)}`;

export const rest = {
  me: (key?: string) => api<Me>('/api/auth/me', { key }),
  models: () => api<Models>('/api/config/models'),
  sessions: (q: string, limit = 50) => api<SessionList>(`/api/sessions?limit=${limit}${q ? `&q=${encodeURIComponent(q)}` : ''}`),
  session: (id: string) => api<SessionDetail>(sid(id)),
  create: (body: { intent?: string; model?: string; mode?: 'planning' | 'executing' }) => api<{ session_id: string }>('/api/sessions', { method: 'POST', json: body }),
  rename: (id: string, intent: string) => api<Session>(sid(id), { method: 'PATCH', json: { intent } }),
  pin: (id: string, pinned: boolean) => api<Session>(`${sid(id)}/pin`, { method: 'PATCH', json: { pinned } }),
  remove: (id: string) => api<{ deleted: boolean }>(sid(id), { method: 'DELETE' }),
  messages: (id: string) => api<Turn[]>(`${sid(id)}/messages`),
  /** The team workspaces the caller is a member of, and the sessions of one (its members' own). */
  teamWorkspaces: () => api<{ items: { id: string; name: string }[] }>('/api/prod_workspaces'),
  teamWorkspaceSessions: (workspaceId: string, limit = 50) => api<SessionList>(`/api/sessions?limit=${limit}&workspace_id=${encodeURIComponent(workspaceId)}`),
  ls: (id: string, dir: string) => api<Entry[]>(`${sid(id)}/ls/${encodePath(dir)}`),
  file: (id: string, path: string) => request(`${sid(id)}/files/${encodePath(path)}`),
  upload: (id: string, dir: string, files: File[]) => {
    const form = new FormData();
    for (const f of files) form.append('files', f, f.name);
    return api<{ uploaded: string[]; failed: unknown[] }>(`${sid(id)}/upload/${encodePath(dir)}`, { method: 'POST', body: form });
  },
  keys: () => api<ApiKey[]>('/api/user/api-keys/'),
  createKey: (name: string) => api<z.output<typeof KeyCreated>>('/api/user/api-keys/', { method: 'POST', json: { name } }),
  deleteKey: (keyId: string) => api<void>(`/api/user/api-keys/${encodeURIComponent(keyId)}`, { method: 'DELETE' }),
  // Admins only (the service answers 403 to anyone else).
  users: () => api<{ items: User[] }>('/api/prod_users'),
  admins: () => api<{ items: Admin[] }>('/api/admin/admins'),
  grantAdmin: (user_id: string) => api<{ ok: boolean }>('/api/admin/admins', { method: 'POST', json: { user_id } }),
  revokeAdmin: (user_id: string) => api<{ ok: boolean }>(`/api/admin/admins/${encodeURIComponent(user_id)}`, { method: 'DELETE' }),
  /** The REST way to add a user: the SSO sync (`token-status`), which creates a user for an unknown subject. */
  addUser: (u: { sub: string; name: string; email?: string }) =>
    api<z.output<typeof TokenStatus>>('/api/prod_users/token-status', { method: 'POST', json: { users: [u] } }),
  checkpoints: (id: string) => api<Checkpoint[]>(`${sid(id)}/checkpoints`),
  rewind: (id: string, checkpoint_id: string) => api<{ message: string; removed_turns: number; restored_files: number }>(`${sid(id)}/rewind`, { method: 'POST', json: { checkpoint_id } }),
  share: (id: string) => api<ShareLink>(`${sid(id)}/share`, { method: 'POST', json: {} }),
  revoke: (id: string, token: string) => api<{ revoked: boolean }>(`${sid(id)}/share/${encodeURIComponent(token)}`, { method: 'DELETE' }),
  // Sign-ins and personal model keys (docs/identity.md, docs/model-keys.md).
  signOut: () => api<{ ok: true; end_session_url: string | null }>('/api/auth/signout', { method: 'POST' }),
  signins: () => api<{ items: Signin[] }>('/api/auth/signins'),
  revokeSignin: (signinId: string) => api<void>(`/api/auth/signins/${encodeURIComponent(signinId)}`, { method: 'DELETE' }),
  modelKeys: () => api<{ items: ModelKey[] }>('/api/me/credentials'),
  setModelKey: (modelId: string, api_key: string) => api<ModelKey>(`/api/me/credentials/${encodeURIComponent(modelId)}`, { method: 'PUT', json: { api_key } }),
  deleteModelKey: (modelId: string) => api<void>(`/api/me/credentials/${encodeURIComponent(modelId)}`, { method: 'DELETE' }),
};
