import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me, publicRoute } from '../../platform/server/auth.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import { text } from '../../platform/lib/storable.js';
import { ProviderUnreachable, type SignedIn } from './provider.js';
import { COOKIE, type Identities, ownOrigin, roleOf, SigninRefused } from './service.js';

const Signin = z.object({
  id: z.string(),
  user_id: z.string(),
  kind: z.enum(['browser', 'cli']),
  user_agent: z.string().nullable(),
  ip: z.string().nullable(),
  created_at: z.string(),
  last_seen_at: z.string(),
  expires_at: z.string(),
  current: z.boolean(),
});
const Role = z.enum(['admin', 'member', 'viewer']);
const UserState = z.object({ id: z.string(), username: z.string(), role: Role, disabled: z.boolean() });
const AuditRecord = z.object({ id: z.string(), at: z.string(), action: z.string(), user_id: z.string().nullable(), actor_id: z.string().nullable(), detail: z.record(z.string(), z.unknown()) });
const DeviceStart = z.object({ user_code: z.string(), verification_uri: z.string(), verification_uri_complete: z.string().optional(), interval: z.number().int(), expires_in: z.number().int(), request_id: z.string() });
const DeviceToken = z.object({
  status: z.enum(['authorization_pending', 'slow_down', 'ok']),
  token: z.string().optional(),
  username: z.string().optional(),
  role: Role.optional(),
});

const CliToken = z.object({ status: z.literal('ok'), token: z.string(), username: z.string(), role: Role });
const LoopbackStart = z.object({ authorization_url: z.string(), state: z.string(), expires_in: z.number().int() });
/** The PKCE S256 challenge (RFC 7636 4.2: base64url of a SHA-256, 43 characters) and a verifier (4.1). */
const CodeChallenge = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a PKCE S256 code challenge: 43 base64url characters');
const CodeVerifier = z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/, 'a PKCE code verifier: 43 to 128 characters of A-Z a-z 0-9 - . _ ~');

const CALLBACK = '/api/auth/oidc/callback';
/** The provider's answer (RFC 6749 4.1.2, RFC 9207 `iss`); other parameters pass through to openid-client. */
const param = z.string().max(4000).optional();
const CallbackQuery = z.looseObject({ code: param, state: param, iss: param, error: param, error_description: param });
/** How long a sign-in may take at the provider before its state is forgotten. */
const REQUEST_TTL_MS = 10 * 60_000;

const html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page a browser lands on when a sign-in cannot go on: what happened and a way back. */
function page(reply: FastifyReply, status: number, title: string, message: string) {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${html(title)}</title><meta name="viewport" content="width=device-width"></head>` +
        `<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem"><h1>${html(title)}</h1><p id="message">${html(message)}</p><p><a href="/">Back to the sign-in page</a></p></body></html>`,
    );
}

/**
 * A terminal's redirect URI (RFC 8252 7.3): `http://127.0.0.1:<port>/callback` or `http://[::1]:<port>/callback`,
 * nothing else, so the service never builds a sign-in that sends a code anywhere but back to the
 * machine the browser runs on. Answers it normalised, or null.
 */
function loopbackRedirect(v: string): string | null {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return null;
  }
  const loopback = u.hostname === '127.0.0.1' || u.hostname === '[::1]';
  return u.protocol === 'http:' && loopback && Number(u.port) > 0 && u.pathname === '/callback' && !u.search && !u.hash && !u.username && !u.password ? u.href : null;
}

/** openid-client's error says which check failed; its cause says on what (the claim: exp, aud, nonce...). */
function refusal(e: unknown): string {
  const cause = (e as Error).cause;
  return `${(e as Error).message}${cause instanceof Error ? `: ${cause.message}` : ''}`;
}

/** Only a path of this service (never `//host` or a URL): no open redirect. */
function safeReturn(v: unknown): string {
  return typeof v === 'string' && v.startsWith('/') && !v.startsWith('//') && !v.startsWith('/\\') && v.length < 2000 ? v : '/';
}

export const identityRoutes: FastifyPluginAsyncZod<{ identities: Identities }> = async (app, { identities }) => {
  const c = identities.config;
  const base = (req: FastifyRequest) => ownOrigin(req.headers, c, req.protocol === 'https');
  const redirectUri = (req: FastifyRequest) => `${base(req)}${CALLBACK}`;
  const secure = (req: FastifyRequest) => base(req).startsWith('https:');
  const cookie = (req: FastifyRequest, value: string, maxAgeS: number) =>
    `${COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure(req) ? '; Secure' : ''}`;
  const provider = () => {
    if (!identities.provider) throw new AppError(404, 'OIDC_NOT_CONFIGURED', 'sign-in with a provider is not configured (AGENTSVC_OIDC_ISSUER)');
    return identities.provider;
  };
  const tags = ['auth'];
  const meta = (req: FastifyRequest) => ({ userAgent: req.headers['user-agent'] ?? null, ip: req.ip ?? null });

  app.get('/api/auth/oidc/login', { config: publicRoute, schema: { tags, querystring: z.object({ return_to: z.string().max(2000).optional() }) } }, async (req, reply) => {
    const p = provider();
    try {
      const a = await p.authorizationUrl(redirectUri(req));
      await identities.store.addRequest({ id: a.state, kind: 'browser', nonce: a.nonce, code_verifier: a.verifier, device_code: null, return_to: safeReturn(req.query.return_to) }, REQUEST_TTL_MS);
      return reply.redirect(a.url, 302);
    } catch (e) {
      if (e instanceof ProviderUnreachable) {
        req.log.warn({ err: e.message }, 'sign-in provider unreachable');
        return page(reply, 503, `${p.settings.name} cannot be reached`, `The sign-in provider does not answer right now (${p.settings.issuer}). Try again in a moment, or sign in with a key.`);
      }
      throw e;
    }
  });

  app.get('/api/auth/oidc/callback', { config: publicRoute, schema: { tags, querystring: CallbackQuery } }, async (req, reply) => {
    const p = provider();
    const q = req.query as Record<string, string>;
    const fail = async (status: number, reason: string, message: string) => {
      await identities.auditFailure(reason, { ip: req.ip });
      return page(reply, status, 'Sign-in failed', message);
    };
    if (q.error) return fail(400, 'provider_error', `${p.settings.name} refused the sign-in: ${q.error_description ?? q.error}`);
    // The state names the sign-in this browser started here; it is taken once, so a replayed or forged callback finds nothing.
    const started = q.state ? await identities.store.takeRequest(q.state) : null;
    if (!started?.nonce || !started.code_verifier) return fail(400, 'unknown_state', 'This sign-in was not started here, was already used, or took too long. Start again.');
    let who: Awaited<ReturnType<typeof p.callback>>;
    try {
      const url = new URL(`${redirectUri(req)}?${new URLSearchParams(q).toString()}`);
      who = await p.callback(url, redirectUri(req), { state: started.id, nonce: started.nonce, verifier: started.code_verifier });
    } catch (e) {
      req.log.warn({ err: (e as Error).message }, 'sign-in callback refused');
      if (e instanceof ProviderUnreachable) return fail(503, 'unreachable', `${p.settings.name} cannot be reached; try again in a moment.`);
      return fail(400, 'invalid_response', `The answer of ${p.settings.name} could not be accepted: ${refusal(e)}. Start again.`);
    }
    try {
      const s = await identities.signIn(who, 'browser', meta(req));
      reply.header('set-cookie', cookie(req, s.token, Math.floor(identities.maxMs / 1000)));
      return reply.redirect(started.return_to ?? '/', 302);
    } catch (e) {
      if (e instanceof SigninRefused) return page(reply, e.status, 'Sign-in refused', e.message);
      throw e;
    }
  });

  app.post('/api/auth/signout', { schema: { tags, response: { 200: z.object({ ok: z.literal(true), end_session_url: z.string().nullable() }) } } }, async (req, reply) => {
    const identity = req.identity;
    if (!identity) throw Errors.unauthorized();
    const end = await identities.signOut(identity, `${base(req)}/`);
    if (identity.via === 'cookie') reply.header('set-cookie', cookie(req, '', 0));
    return { ok: true as const, end_session_url: end };
  });

  app.get('/api/auth/signins', { schema: { tags, querystring: z.object({ user_id: text(100, 1).optional() }), response: { 200: z.object({ items: z.array(Signin) }) } } }, async (req) => {
    const caller = me(req);
    const userId = req.query.user_id ?? caller.id;
    if (userId !== caller.id && roleOf(caller) !== 'admin') throw Errors.forbidden("only an admin may list another user's sign-ins");
    return { items: await identities.list(userId, req.identity?.keyId ?? null) };
  });

  app.delete('/api/auth/signins/:signin_id', { schema: { tags, params: z.object({ signin_id: text(100, 1) }), response: { 204: z.null() } } }, async (req, reply) => {
    await identities.revoke(me(req), req.params.signin_id);
    if (req.params.signin_id === req.identity?.keyId && req.identity.via === 'cookie') reply.header('set-cookie', cookie(req, '', 0));
    return reply.code(204).send(null);
  });

  /** A terminal's sign-in: the token `agentsvc login` stores, or why the person may not sign in. */
  const cliSignIn = async (who: SignedIn, req: FastifyRequest) => {
    try {
      const s = await identities.signIn(who, 'cli', meta(req));
      return { status: 'ok' as const, token: s.token, username: s.user.username, role: roleOf(s.user) };
    } catch (e) {
      if (e instanceof SigninRefused) throw new AppError(e.status, e.reason === 'disabled' ? 'USER_DISABLED' : 'FORBIDDEN_ROLE', e.message);
      throw e;
    }
  };

  // The terminal (RFC 8628): the service holds the client secret and asks the provider for the CLI.
  app.post('/api/auth/device', { config: publicRoute, schema: { tags, response: { 200: DeviceStart } } }, async () => {
    const p = provider();
    if (!(await p.deviceFlowOffered())) throw new AppError(409, 'DEVICE_FLOW_UNAVAILABLE', `${p.settings.name} does not offer the device authorization grant; use agentsvc login --browser`);
    const d = await p.startDevice();
    const request_id = `dev_${crypto.randomUUID()}`;
    await identities.store.addRequest({ id: request_id, kind: 'device', nonce: null, code_verifier: null, device_code: d.device_code, return_to: null }, d.expires_in * 1000);
    return { user_code: d.user_code, verification_uri: d.verification_uri, verification_uri_complete: d.verification_uri_complete, interval: d.interval ?? 5, expires_in: d.expires_in, request_id };
  });

  app.post('/api/auth/device/token', { config: publicRoute, schema: { tags, body: z.object({ request_id: text(100, 1) }).strict(), response: { 200: DeviceToken } } }, async (req) => {
    const p = provider();
    const r = await identities.store.deviceRequest(req.body.request_id);
    if (!r?.device_code) throw new AppError(400, 'DEVICE_EXPIRED', 'this sign-in request is unknown or expired; run agentsvc login again');
    const polled = await p.pollDevice(r.device_code);
    if (polled.status !== 'ok') {
      if (polled.status !== 'denied') return { status: polled.status };
      await identities.store.takeDeviceRequest(r.id);
      await identities.auditFailure(`device_${polled.error}`, { ip: req.ip });
      throw new AppError(400, 'ACCESS_DENIED', `the provider refused the sign-in (${polled.error})`);
    }
    await identities.store.takeDeviceRequest(r.id);
    return cliSignIn(polled.signedIn, req);
  });

  // The terminal through a browser (RFC 8252 7.3), for providers without the device grant: the CLI
  // listens on a loopback port and keeps the PKCE verifier; the service, which holds the client
  // secret, builds the authorization URL and exchanges the code the CLI brings back.
  app.post(
    '/api/auth/loopback',
    { config: publicRoute, schema: { tags, body: z.object({ redirect_uri: z.string().max(200), code_challenge: CodeChallenge }).strict(), response: { 200: LoopbackStart } } },
    async (req) => {
      const p = provider();
      const redirect = loopbackRedirect(req.body.redirect_uri);
      if (!redirect) throw Errors.invalid(['body', 'redirect_uri'], 'must be http://127.0.0.1:<port>/callback or http://[::1]:<port>/callback (where agentsvc login listens)');
      const a = await p.authorizationUrlFor(redirect, req.body.code_challenge);
      await identities.store.addRequest({ id: a.state, kind: 'loopback', nonce: a.nonce, code_verifier: null, device_code: null, return_to: null, redirect_uri: redirect }, REQUEST_TTL_MS);
      return { authorization_url: a.url, state: a.state, expires_in: REQUEST_TTL_MS / 1000 };
    },
  );

  app.post(
    '/api/auth/loopback/token',
    {
      config: publicRoute,
      schema: {
        tags,
        // What the provider's redirect brought to the CLI (RFC 6749 4.1.2, RFC 9207 `iss`), and the PKCE verifier.
        body: z.object({ state: text(200, 1), code_verifier: CodeVerifier, code: param, iss: param, error: param, error_description: param }).strict(),
        response: { 200: CliToken },
      },
    },
    async (req) => {
      const p = provider();
      const b = req.body;
      // Taken once, whatever follows: a replayed or forged exchange finds nothing.
      const started = await identities.store.takeLoopbackRequest(b.state);
      if (!started?.nonce || !started.redirect_uri) throw new AppError(400, 'SIGNIN_EXPIRED', 'this sign-in is unknown, was already used, or took too long; run agentsvc login again');
      if (b.error) {
        await identities.auditFailure(`loopback_${b.error}`.slice(0, 100), { ip: req.ip });
        throw new AppError(400, 'ACCESS_DENIED', `the provider refused the sign-in (${b.error}${b.error_description ? `: ${b.error_description}` : ''})`);
      }
      const callback = new URL(started.redirect_uri);
      for (const k of ['code', 'state', 'iss'] as const) if (b[k] !== undefined) callback.searchParams.set(k, b[k]);
      let who: SignedIn;
      try {
        who = await p.callback(callback, started.redirect_uri, { state: started.id, nonce: started.nonce, verifier: b.code_verifier });
      } catch (e) {
        if (e instanceof ProviderUnreachable) throw e;
        req.log.warn({ err: (e as Error).message }, 'terminal sign-in refused');
        await identities.auditFailure('invalid_response', { ip: req.ip });
        throw new AppError(400, 'SIGNIN_INVALID', `the answer of ${p.settings.name} could not be accepted: ${refusal(e)}`);
      }
      return cliSignIn(who, req);
    },
  );

  const admin = (req: FastifyRequest) => {
    if (roleOf(me(req)) !== 'admin') throw Errors.forbidden('admins only');
    return me(req);
  };

  app.patch(
    '/api/admin/users/:user_id',
    { schema: { tags: ['admin'], params: z.object({ user_id: text(100, 1) }), body: z.object({ role: Role.optional(), disabled: z.boolean().optional() }).strict(), response: { 200: UserState } } },
    async (req) => identities.setUser(admin(req), req.params.user_id, req.body),
  );

  app.get(
    '/api/admin/identity-audit',
    {
      schema: {
        tags: ['admin'],
        querystring: z.object({ user_id: text(100, 1).optional(), action: text(40, 1).optional(), limit: z.coerce.number().int().min(1).max(500).default(100), offset: z.coerce.number().int().min(0).default(0) }),
        response: { 200: z.object({ items: z.array(AuditRecord), total: z.number().int() }) },
      },
    },
    async (req) => {
      admin(req);
      return identities.auditList({ userId: req.query.user_id, action: req.query.action, limit: req.query.limit, offset: req.query.offset });
    },
  );
};
