import t from 'tap';
import { build } from '../helpers/app.js';

/**
 * The web console is served at `/` without a key (docs/console.md): index.html for the
 * app's routes under a strict CSP, hashed assets cached for a year and precompressed, while every
 * other path keeps its meaning (key-only 401, /api, /share).
 */

t.test('console: public page and assets, nothing else opened', async (t) => {
  const app = await build(t);
  const get = (path: string, headers: Record<string, string> = {}) => fetch(app.url + path, { headers });

  const index = await get('/');
  t.equal(index.status, 200, '/ answers without a key');
  t.match(index.headers.get('content-type'), /text\/html/);
  t.equal(index.headers.get('cache-control'), 'no-cache', 'index.html is revalidated: a new build is seen at the next load');
  const csp = index.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/, 'scripts from this origin only: no inline, no CDN');
  t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:/, 'nothing inline, nothing from elsewhere');
  t.match(csp, /frame-ancestors 'none'/);
  t.equal(index.headers.get('x-content-type-options'), 'nosniff');
  const html = await index.text();
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script in index.html');
  t.notMatch(html, /(src|href)="(https?:)?\/\//, 'no asset from another origin');
  const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
  t.ok(assets.some((a) => a.endsWith('.js')) && assets.some((a) => a.endsWith('.css')), `index.html names its bundle and stylesheet: ${assets.join(', ')}`);

  for (const path of ['/sessions', '/sessions/sess_x', '/sessions/sess_x/files', '/sessions/sess_x/checkpoints/', '/sessions/sess_x/policy', '/usage', '/users', '/keys', '/audit']) {
    const r = await get(path);
    t.equal(r.status, 200, `${path}: an app route answers index.html`);
    t.equal(await r.text(), html);
  }

  const js = assets.find((a) => a.endsWith('.js'))!;
  const plain = await get(js, { 'accept-encoding': 'identity' });
  t.equal(plain.status, 200);
  t.match(plain.headers.get('content-type'), /javascript/);
  t.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable', 'hashed assets are cached for good');
  const body = await plain.arrayBuffer();
  const br = await fetch(app.url + js, { headers: { 'accept-encoding': 'br' } });
  t.equal(br.headers.get('content-encoding'), 'br', 'precompressed brotli is sent to a browser that takes it');
  t.ok(Number(br.headers.get('content-length')) < body.byteLength / 2, `compressed ${br.headers.get('content-length')} of ${body.byteLength} bytes`);
  t.equal((await get('/assets/nope.js')).status, 404, 'an unknown asset is a plain 404');
  t.equal((await get('/assets/../package.json')).status !== 200, true, 'no way out of the assets folder');
  t.equal((await get('/assets/%2e%2e/index.html')).status !== 200, true, 'not even encoded');

  // Everything else keeps its meaning.
  t.equal((await get('/nope')).status, 401, 'an unknown path is still 401 without a key');
  t.equal((await get('/sessionsx')).status, 401, 'only the listed app routes are public');
  const post = await fetch(app.url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x: 'y'.repeat(2_000_000) }) });
  t.equal(post.status, 401, 'public per method: POST / is refused before its body is read');
  t.equal((await get('/api/sessions')).status, 401, '/api needs a key');
  t.equal((await app.api('/api/sessions')).status, 200);
  t.equal((await app.api('/nope')).status, 404, 'with a key, an unknown path is 404');
  t.equal((await get('/api/health')).status, 200);
  t.equal((await get('/share/share_nope')).status, 404, '/share keeps its page');
  t.match((await get('/socket.io/?EIO=4&transport=polling')).status, /^(200|400)$/, '/socket.io is the real-time channel, not the console');
  t.notMatch(JSON.stringify((await (await app.api('/api/openapi.json')).json()).paths), /"\/sessions|"\/assets|"\/"/, 'the console is no part of the API description');
});
