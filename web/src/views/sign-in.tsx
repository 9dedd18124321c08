import { useEffect, useState } from 'preact/hooks';
import { ApiError, csrfStore, keyStore, type Me, rest } from '../api.js';
import { Connection } from '../connection.js';
import { Notice } from './notice.js';

/**
 * Signing in to the console (docs/identity.md "The console"): with the team's provider (a cookie the
 * service sets after the provider's redirect) or with an API key (kept in the tab), the key form
 * hidden when the install switched key sign-in off; signing out (at the provider too when it offers
 * an end-session endpoint); and the notice a refused role gets.
 */

export type Role = Me['role'];

export interface Signed {
  /** The API key of a key sign-in; null when the browser's sign-in cookie is what signs requests. */
  key: string | null;
  username: string;
  /** An admin: the admin pages are offered (the service checks again on every request). */
  admin: boolean;
  role: Role;
  conn: Connection;
}

/** What the sign-in page offers, from the public `GET /api/config`. */
interface SignInOptions {
  oidcEnabled: boolean;
  oidcName: string | null;
  keySigninEnabled: boolean;
}

const message = (e: unknown) => (e instanceof ApiError ? e.message : String(e));

function signedFrom(me: Me, key: string | null): Signed {
  csrfStore.set(key ? null : me.csrf_token);
  return { key, username: me.username, admin: me.is_admin, role: me.role, conn: new Connection(key) };
}

/**
 * The sign-in this tab already has: its key, else the browser's sign-in cookie (asked without the
 * app-wide "signed out" event, since having none is the ordinary start). Null when there is none.
 */
export async function restore(): Promise<{ signed: Signed | null; notice: string | null }> {
  const key = keyStore.get();
  if (key) {
    try {
      return { signed: signedFrom(await rest.me(key), key), notice: null };
    } catch (e) {
      keyStore.clear();
      return { signed: null, notice: message(e) };
    }
  }
  const r = await fetch('/api/auth/me', { credentials: 'same-origin' }).catch(() => null);
  if (!r) return { signed: null, notice: 'the service did not answer (is it running?)' };
  if (r.ok) return { signed: signedFrom((await r.json()) as Me, null), notice: null };
  return { signed: null, notice: null };
}

/**
 * Ends this tab's sign-in. A cookie sign-in is ended at the service; when the provider offers
 * sign-out too, the browser goes there (it comes back to the sign-in page). A key is only forgotten:
 * it stays valid for the scripts that use it.
 */
export async function endSignIn(signed: Signed): Promise<void> {
  keyStore.clear();
  signed.conn.close();
  if (signed.key) return;
  let end: string | null = null;
  try {
    end = (await rest.signOut()).end_session_url;
  } catch {
    // Already ended (revoked, expired): nothing left to end here.
  }
  csrfStore.set(null);
  if (end) location.assign(end);
}

function useOptions(): SignInOptions | null {
  const [options, setOptions] = useState<SignInOptions | null>(null);
  useEffect(() => {
    fetch('/api/config')
      .then((r) => (r.ok ? (r.json() as Promise<SignInOptions>) : Promise.reject(new Error(String(r.status)))))
      // Without the config, offer what always worked: the key.
      .then(setOptions, () => setOptions({ oidcEnabled: false, oidcName: null, keySigninEnabled: true }));
  }, []);
  return options;
}

export function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Signed) => void; notice: string | null }) {
  const options = useOptions();
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const me = await rest.me(key.trim());
      keyStore.set(key.trim());
      onSignedIn(signedFrom(me, key.trim()));
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };
  if (!options) return <p class="loading">Loading…</p>;
  const returnTo = location.pathname === '/' ? '' : `?return_to=${encodeURIComponent(location.pathname + location.search)}`;
  const withKey = options.keySigninEnabled || !options.oidcEnabled;
  return (
    <main class="signin">
      <section class="signin-card" aria-labelledby="signin-title">
        <h1 id="signin-title">agentsvc</h1>
        {options.oidcEnabled && (
          <>
            <p>Sign in with your team's account.</p>
            <a class="button primary signin-provider" href={`/api/auth/oidc/login${returnTo}`}>
              Sign in with {options.oidcName ?? 'your provider'}
            </a>
          </>
        )}
        {options.oidcEnabled && withKey && (
          <p class="signin-or" aria-hidden="true">
            <span>or</span>
          </p>
        )}
        {withKey && (
          <form onSubmit={submit}>
            <p>Sign in with an API key. It stays in this tab only and is forgotten when the tab closes.</p>
            <label for="key">API key</label>
            <input
              id="key"
              name="key"
              type="password"
              autocomplete="off"
              spellcheck={false}
              placeholder="sk-agentsvc-v2-…"
              value={key}
              onInput={(e) => setKey(e.currentTarget.value)}
              required
            />
            <button type="submit" class={options.oidcEnabled ? '' : 'primary'} disabled={busy || !key.trim()}>
              {busy ? 'Signing in…' : options.oidcEnabled ? 'Sign in with key' : 'Sign in'}
            </button>
            <p class="hint">
              <code>agentsvc up</code> wrote the admin key to <code>admin.key</code> in its home (<code>AGENTSVC_HOME</code>, <code>~/.agentsvc</code> unless set); <code>agentsvc keys create</code> makes more.
            </p>
          </form>
        )}
        <Notice error={error} />
      </section>
    </main>
  );
}

const ROLE_WORDS: Record<Role, string> = {
  admin: 'an administrator',
  member: 'a member',
  viewer: 'a viewer',
};

/**
 * Shown when the service refused something for the person's role (REST 403 FORBIDDEN_ROLE, or a
 * socket event acked so): what happened in plain words and what to do, instead of the bare code.
 */
export function RoleRefused({ role: signedAs }: { role: Role }) {
  const [refused, setRefused] = useState<string | null>(null);
  const [role, setRole] = useState<Role>(signedAs);
  useEffect(() => {
    const on = (e: Event) => {
      setRefused((e as CustomEvent<string>).detail);
      // An admin may have changed the role since this tab signed in: say the one that refused.
      rest.me().then(
        (me) => setRole(me.role),
        () => {},
      );
    };
    window.addEventListener('agentsvc:role-refused', on);
    return () => window.removeEventListener('agentsvc:role-refused', on);
  }, []);
  if (!refused) return null;
  return (
    <div class="role-refused" role="alert" aria-labelledby="role-refused-title">
      <div>
        <h2 id="role-refused-title">Your role does not allow this</h2>
        <p>
          You are signed in as {ROLE_WORDS[role]}.{' '}
          {role === 'viewer'
            ? 'A viewer can read their own sessions, those of their team workspaces and share links, but cannot start sessions, send messages, run tools or change anything.'
            : 'This needs a role with more rights.'}{' '}
          Ask an administrator if you need more.
        </p>
        <p class="muted">The service said: {refused}</p>
      </div>
      <button type="button" onClick={() => setRefused(null)}>
        Dismiss
      </button>
    </div>
  );
}
