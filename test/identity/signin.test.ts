import t from 'tap';
import { io as connect, type Socket } from 'socket.io-client';
import { waitFor } from '../helpers/wait.js';
import { request } from '../helpers/socket.js';
import { Jar, signIn, throughProvider, withProvider } from './oidc.js';

// Sign-in with a real OpenID Provider (test/identity/provider.mjs) and the rules of docs/identity.md.

const withCookie = (jar: Jar, init: RequestInit = {}) => ({ ...init, headers: { ...(init.headers as Record<string, string>), cookie: jar.header() } });

t.test('sign-in: state, nonce, PKCE and the ID token checked; the cookie, the user, the role', async (t) => {
  const { app, provider } = await withProvider(t);

  t.test('a sign-in creates the user linked to the subject, with the role of their groups', async (t) => {
    const jar = new Jar();
    const callback = await throughProvider(app, jar, 'bob');
    const r = await jar.fetch(callback);
    t.equal(r.status, 302);
    t.equal(r.headers.get('location'), '/');
    const set = r.headers.getSetCookie().find((c) => c.startsWith('agentsvc_signin='));
    t.match(set, /; HttpOnly/);
    t.match(set, /; SameSite=Lax/);
    t.notMatch(set, /Secure/, 'not Secure on plain http');
    const me = await (await fetch(`${app.url}/api/auth/me`, withCookie(jar))).json();
    t.equal(me.username, 'bob');
    t.equal(me.role, 'member');
    t.equal(me.is_admin, false);
    t.match(me.csrf_token, /^[A-Za-z0-9]{32}$/);
    // The admin, signed in by the provider's group.
    const alice = await signIn(app, 'alice');
    const am = await (await fetch(`${app.url}/api/auth/me`, withCookie(alice))).json();
    t.same([am.role, am.is_admin], ['admin', true]);
  });

  t.test('a callback with a wrong state is refused with a page, no cookie, and audited', async (t) => {
    const jar = new Jar();
    const callback = new URL(await throughProvider(app, jar, 'bob'));
    callback.searchParams.set('state', 'forged-state');
    const r = await jar.fetch(callback.href);
    t.equal(r.status, 400);
    t.match(await r.text(), /not started here/);
    t.notOk(jar.cookies.has('agentsvc_signin'));
    const audit = await (await app.api('/api/admin/identity-audit?action=signin_failed')).json();
    t.equal(audit.items.filter((a: { detail: { reason: string } }) => a.detail.reason === 'unknown_state').length, 1, 'the forged callback, audited once as unknown_state');
  });

  t.test('a replayed callback (the same code and state again) is refused', async (t) => {
    const jar = new Jar();
    const callback = await throughProvider(app, jar, 'bob');
    t.equal((await jar.fetch(callback)).status, 302);
    const again = new Jar();
    const r = await again.fetch(callback);
    t.equal(r.status, 400);
    t.notOk(again.cookies.has('agentsvc_signin'));
  });

  t.test('an expired ID token is refused', async (t) => {
    const jar = new Jar();
    const callback = await throughProvider(app, jar, 'bob');
    // Tokens issued now by a clock two hours behind expired an hour ago (default ID token life: 1 h).
    await provider.skew(-7200);
    t.teardown(() => provider.skew(0));
    const r = await jar.fetch(callback);
    t.equal(r.status, 400);
    t.match(await r.text(), /JWT timestamp claim value failed validation: unexpected JWT &#34;exp&#34; \(expiration time\) claim value, expiration is past current timestamp/);
    t.notOk(jar.cookies.has('agentsvc_signin'));
  });

  t.test('a user in no mapped group is refused with a clear page', async (t) => {
    const jar = new Jar();
    const r = await jar.fetch(await throughProvider(app, jar, 'eve'));
    t.equal(r.status, 403);
    t.match(await r.text(), /in no group that may use this service/);
  });

  t.test('a cookie change without X-CSRF-Token is 403 CSRF_REQUIRED; with it, it goes through; keys need none', async (t) => {
    const jar = await signIn(app, 'bob');
    const body = JSON.stringify({ name: 'k' });
    const json = { 'content-type': 'application/json' };
    const refused = await fetch(`${app.url}/api/user/api-keys/`, withCookie(jar, { method: 'POST', body, headers: json }));
    t.equal(refused.status, 403);
    t.same(await refused.json(), { detail: 'a change made with a sign-in cookie needs the X-CSRF-Token header (csrf_token of GET /api/auth/me)', code: 'CSRF_REQUIRED' });
    const wrong = await fetch(`${app.url}/api/user/api-keys/`, withCookie(jar, { method: 'POST', body, headers: { ...json, 'x-csrf-token': 'nope' } }));
    t.equal(wrong.status, 403);
    const { csrf_token } = await (await fetch(`${app.url}/api/auth/me`, withCookie(jar))).json();
    const ok = await fetch(`${app.url}/api/user/api-keys/`, withCookie(jar, { method: 'POST', body, headers: { ...json, 'x-csrf-token': csrf_token } }));
    t.equal(ok.status, 201);
    const byKey = await app.api('/api/user/api-keys/', { method: 'POST', json: { name: 'k2' } });
    t.equal(byKey.status, 201, 'an API key request needs no CSRF token');
  });

  t.test('the socket handshake by cookie checks Origin', async (t) => {
    const jar = await signIn(app, 'bob');
    const open = (origin: string) =>
      new Promise<{ ok: boolean; code?: string; sock: Socket }>((resolve) => {
        const sock = connect(app.url, { transports: ['websocket'], reconnection: false, forceNew: true, extraHeaders: { cookie: jar.header(), origin } });
        t.teardown(() => sock.disconnect());
        sock.on('connect', () => resolve({ ok: true, sock }));
        sock.on('connect_error', (e: Error & { data?: { code: string } }) => resolve({ ok: false, code: e.data?.code, sock }));
      });
    t.same((await open('https://evil.example')).code, 'ORIGIN_REFUSED');
    t.equal((await open(app.url)).ok, true);
  });

  t.test("a viewer reads but is refused changes: REST 403 FORBIDDEN_ROLE, chat:send acked FORBIDDEN_ROLE", async (t) => {
    const jar = await signIn(app, 'vic');
    const me = await (await fetch(`${app.url}/api/auth/me`, withCookie(jar))).json();
    t.equal(me.role, 'viewer');
    t.equal((await fetch(`${app.url}/api/sessions`, withCookie(jar))).status, 200, 'reads');
    const create = await fetch(`${app.url}/api/sessions`, withCookie(jar, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'x-csrf-token': me.csrf_token } }));
    t.equal(create.status, 403);
    t.equal((await create.json()).code, 'FORBIDDEN_ROLE');
    const sock = connect(app.url, { transports: ['websocket'], reconnection: false, forceNew: true, extraHeaders: { cookie: jar.header(), origin: app.url } });
    t.teardown(() => sock.disconnect());
    await waitFor(() => sock.connected, { what: 'the viewer socket' });
    const ack = await request(sock, 'chat:send', { session_id: 'sess_x', message: 'hi' });
    t.same(ack, { ok: false, error: { code: 'FORBIDDEN_ROLE', message: 'a viewer may not use chat:send' } });
  });

  t.test('signed-in devices: listed, one revoked (its socket closes), sign-out ends the cookie', async (t) => {
    const a = await signIn(app, 'bob');
    const b = await signIn(app, 'bob');
    const list = await (await fetch(`${app.url}/api/auth/signins`, withCookie(a))).json();
    const current = list.items.filter((s: { current: boolean }) => s.current);
    t.equal(current.length, 1);
    // a and b, and bob's four sign-ins of the subtests before this one.
    t.equal(list.items.length, 6, "bob's sign-ins are listed");
    const sock = connect(app.url, { transports: ['websocket'], reconnection: false, forceNew: true, extraHeaders: { cookie: b.header(), origin: app.url } });
    t.teardown(() => sock.disconnect());
    await waitFor(() => sock.connected, { what: 'the socket of the second sign-in' });
    // Revoke every other sign-in of bob's, b's among them.
    const { csrf_token } = await (await fetch(`${app.url}/api/auth/me`, withCookie(a))).json();
    for (const s of list.items.filter((s: { current: boolean }) => !s.current)) {
      const r = await fetch(`${app.url}/api/auth/signins/${s.id}`, withCookie(a, { method: 'DELETE', headers: { 'x-csrf-token': csrf_token } }));
      t.equal(r.status, 204);
    }
    const left = await (await fetch(`${app.url}/api/auth/signins`, withCookie(a))).json();
    t.same(left.items.map((s: { current: boolean }) => s.current), [true], 'only the current sign-in is left');
    await waitFor(() => !sock.connected, { what: 'the revoked sign-in socket to close' });
    t.equal((await fetch(`${app.url}/api/auth/me`, withCookie(b))).status, 401, 'the revoked cookie is refused');
    const out = await fetch(`${app.url}/api/auth/signout`, withCookie(a, { method: 'POST', headers: { 'x-csrf-token': csrf_token } }));
    t.equal(out.status, 200);
    const body = await out.json();
    t.match(body.end_session_url, new RegExp(`^${provider.issuer}/session/end\\?`), 'the provider offers end-session');
    t.equal((await fetch(`${app.url}/api/auth/me`, withCookie(a))).status, 401);
  });

  t.test("an admin disables a user: their open socket is cut, their cookie and keys refused, sign-in refused", async (t) => {
    const jar = await signIn(app, 'bob');
    const me = await (await fetch(`${app.url}/api/auth/me`, withCookie(jar))).json();
    const sock = connect(app.url, { transports: ['websocket'], reconnection: false, forceNew: true, extraHeaders: { cookie: jar.header(), origin: app.url } });
    t.teardown(() => sock.disconnect());
    await waitFor(() => sock.connected, { what: "bob's socket" });
    const started = Date.now();
    const r = await app.api(`/api/admin/users/${me.id}`, { method: 'PATCH', json: { disabled: true } });
    t.same(await r.json(), { id: me.id, username: 'bob', role: 'member', disabled: true });
    await waitFor(() => !sock.connected, { what: "bob's socket to be cut" });
    t.comment(`disable reached the open socket in ${Date.now() - started} ms`);
    t.equal((await fetch(`${app.url}/api/auth/me`, withCookie(jar))).status, 401);
    const again = new Jar();
    const refused = await again.fetch(await throughProvider(app, again, 'bob'));
    t.equal(refused.status, 403);
    t.match(await refused.text(), /disabled/);
    await app.api(`/api/admin/users/${me.id}`, { method: 'PATCH', json: { disabled: false } });
    const audit = await (await app.api(`/api/admin/identity-audit?user_id=${me.id}`)).json();
    const actions = audit.items.map((a: { action: string }) => a.action);
    t.same([...new Set(actions)].sort(), ['role_changed', 'signin', 'signin_failed', 'signout', 'user_disabled', 'user_enabled'], 'every kind of change to bob is audited');
    t.notOk(JSON.stringify(audit).includes(jar.cookies.get('agentsvc_signin') ?? '-'), 'no secret in the audit');
  });

  t.test('an admin sets a role by hand; the provider mapping applies again at the next sign-in', async (t) => {
    const jar = await signIn(app, 'bob');
    const me = await (await fetch(`${app.url}/api/auth/me`, withCookie(jar))).json();
    const r = await app.api(`/api/admin/users/${me.id}`, { method: 'PATCH', json: { role: 'viewer' } });
    t.equal((await r.json()).role, 'viewer');
    t.equal((await (await fetch(`${app.url}/api/auth/me`, withCookie(jar))).json()).role, 'viewer');
    await signIn(app, 'bob');
    t.equal((await (await fetch(`${app.url}/api/auth/me`, withCookie(jar))).json()).role, 'member');
    const bob = await signIn(app, 'bob');
    const { csrf_token } = await (await fetch(`${app.url}/api/auth/me`, withCookie(bob))).json();
    const refused = await fetch(`${app.url}/api/admin/users/${me.id}`, withCookie(bob, { method: 'PATCH', body: '{"role":"admin"}', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf_token } }));
    t.equal(refused.status, 403, 'a member cannot set roles');
  });
});

t.test('the provider down: the login route answers a clear page, not a crash', async (t) => {
  const { app } = await withProvider(t, { AGENTSVC_OIDC_ISSUER: 'http://127.0.0.1:9/' });
  const r = await fetch(`${app.url}/api/auth/oidc/login`, { redirect: 'manual' });
  t.equal(r.status, 503);
  t.match(await r.text(), /Test IdP cannot be reached/);
  t.match(
    app.service.warnings.filter((w) => w.startsWith('sign-in provider')),
    [/^sign-in provider http:\/\/127\.0\.0\.1:9\/ cannot be reached yet \(.+\); the sign-in page says so until it answers$/],
    'up warns once, naming the provider',
  );
  const cfg = await (await fetch(`${app.url}/api/config`)).json();
  t.same([cfg.oidcEnabled, cfg.oidcName, cfg.keySigninEnabled], [true, 'Test IdP', true]);
});
