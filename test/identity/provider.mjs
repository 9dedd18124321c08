// A real OpenID Provider for the identity tests: panva's oidc-provider (OpenID Certified), on
// loopback, with accounts and groups, PKCE required and the device flow on. Run as a child process
// so that its clock can be moved (POST /__skew?seconds=N) without moving the service's: an ID token
// issued while skewed back is already expired when the service checks it.
import http from 'node:http';
import Provider from 'oidc-provider';

/** Accounts by login; the password is not checked (the provider's development login form). */
const GROUPS = { alice: ['agentsvc-admins', 'staff'], bob: ['staff'], vic: ['readers'], eve: ['visitors'] };

let skewMs = 0;
const realNow = Date.now;
Date.now = () => realNow() + skewMs;

let provider = null;
let issuer = '';

/**
 * `device`: the device flow offered (default); off, discovery has no device_authorization_endpoint.
 * `loopback`: the client is also a native app (RFC 8252 7.3): `http://127.0.0.1/callback` at any port.
 */
function build(redirectUri, afterLogout, { device = true, loopback = false } = {}) {
  const p = new Provider(issuer, {
    clients: [
      {
        client_id: 'agentsvc',
        client_secret: 'test-client-secret-0123456789',
        application_type: loopback ? 'native' : 'web',
        redirect_uris: loopback ? [redirectUri, 'http://127.0.0.1/callback'] : [redirectUri],
        post_logout_redirect_uris: [afterLogout],
        grant_types: device ? ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'] : ['authorization_code'],
        response_types: ['code'],
      },
    ],
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: `sub-${id}`, preferred_username: id, email: `${id}@example.test`, groups: GROUPS[id] ?? [] }),
    }),
    claims: { openid: ['sub', 'groups'], profile: ['preferred_username'], email: ['email'] },
    conformIdTokenClaims: false,
    cookies: { keys: ['identity-test-cookie-key-0123456789'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true }, deviceFlow: { enabled: device }, rpInitiatedLogout: { enabled: true } },
  });
  p.on('server_error', (_ctx, e) => console.error('provider error', e));
  return p;
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, issuer);
  if (url.pathname === '/__setup') {
    const q = url.searchParams;
    provider = build(q.get('redirect_uri'), q.get('after_logout'), { device: q.get('device') !== 'off', loopback: q.get('loopback') === 'on' });
    return res.end('ok');
  }
  if (url.pathname === '/__skew') {
    skewMs = Number(url.searchParams.get('seconds')) * 1000;
    return res.end('ok');
  }
  if (!provider) {
    res.statusCode = 503;
    return res.end('not set up');
  }
  provider.callback()(req, res);
});
server.listen(0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  console.log(`provider listening ${issuer}`);
});
process.on('SIGTERM', () => process.exit(0));
