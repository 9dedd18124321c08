import t from 'tap';
import { request } from 'node:http';
import { build } from '../helpers/app.js';

/** A raw HTTP request: fetch would normalise nothing here either, but this keeps the path byte-exact. */
function raw(url: string, method: string, path: string, opts: { headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, method, path, headers: opts.headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

t.test('public or not is decided on the matched route, not the raw URL', async (t) => {
  const app = await build(t, { AGENTSVC_BODY_LIMIT: '1024' });

  // Encoded spellings of key-only routes reach the same handlers: they must still need the key.
  for (const path of ['/%61pi/config/models', '/api/config/%6Dodels', '/%61pi/auth/me', '/%61pi/user/api-keys/']) {
    const res = await raw(app.url, 'GET', path);
    t.equal(res.status, 401, `${path} without a key`);
    t.same(JSON.parse(res.body), { detail: 'missing or invalid API key', code: 'UNAUTHORIZED' });
    const ok = await raw(app.url, 'GET', path, { headers: { authorization: `Bearer ${app.adminKey}` } });
    t.equal(ok.status, 200, `${path} with the key reaches the route`);
  }

  // The public list (docs/trust-boundary.md) stays public, also when spelled differently.
  for (const path of ['/api/health', '/healthz', '/api/config', '/%61pi/config', '/api/openapi.json', '/api/docs', '/api/docs/json']) {
    const res = await raw(app.url, 'GET', path);
    t.ok(res.status < 400, `${path} is public (${res.status})`);
  }
  // HEAD routes fastify derives from GET ones carry the same decision.
  t.equal((await raw(app.url, 'HEAD', '/api/health')).status, 200, 'HEAD of a public route');
  t.equal((await raw(app.url, 'HEAD', '/%61pi/config/models')).status, 401, 'HEAD of a key-only route');
  // Public is per route and method: a key-only method on a public path still needs the key.
  t.equal((await raw(app.url, 'POST', '/api/config')).status, 401, 'unmatched method without a key');

  // Fail closed: an unmatched path without a key is 401 (no route enumeration); with one, 404.
  for (const path of ['/api/nope', '/%61pi/nope', '/nope', '/api/health/extra']) {
    t.equal((await raw(app.url, 'GET', path)).status, 401, `${path} without a key`);
    const withKey = await raw(app.url, 'GET', path, { headers: { authorization: `Bearer ${app.adminKey}` } });
    t.equal(withKey.status, 404, `${path} with a key`);
    t.equal(JSON.parse(withKey.body).code, 'NOT_FOUND');
  }
});

t.test('a request without a key is refused before its body is read', async (t) => {
  const app = await build(t, { AGENTSVC_BODY_LIMIT: '1024' });
  const json = { 'content-type': 'application/json' };
  for (const path of ['/api/user/api-keys/', '/%61pi/user/api-keys/', '/api/nope']) {
    const huge = await raw(app.url, 'POST', path, { headers: json, body: JSON.stringify({ name: 'x'.repeat(64 * 1024) }) });
    t.equal(huge.status, 401, `${path}: over the body limit, no key: 401, not 413`);
    const broken = await raw(app.url, 'POST', path, { headers: json, body: '{"name":' });
    t.equal(broken.status, 401, `${path}: invalid JSON, no key: 401, not 400`);
    const media = await raw(app.url, 'POST', path, { headers: { 'content-type': 'text/x-nope' }, body: 'x' });
    t.equal(media.status, 401, `${path}: unknown media type, no key: 401, not 415`);
  }
  const keys = await (await app.api('/api/user/api-keys/')).json();
  t.equal(keys.length, 1, 'nothing was created');
});
