import t from 'tap';
import { gzipSync } from 'node:zlib';
import { isBlockedAddress, safeFetch, type Resolver } from '../../src/core/tools/web/index.js';
import { startServer } from './fixtures/helpers.js';

// tap matches a thrown error against a class or an object pattern (not a predicate).
const isCode = (code: string) => ({ name: 'FetchError', code });
const isSsrf = { name: 'SsrfError', code: 'blocked' };

/** Pretend names resolve to whatever the test says; unknown names fail like NXDOMAIN. */
function fakeResolver(table: Record<string, string[]>, calls: string[] = []): Resolver {
  return async (host) => {
    calls.push(host);
    const addrs = table[host];
    if (!addrs) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return addrs.map((address) => ({ address, family: address.includes(':') ? 6 as const : 4 as const }));
  };
}

/** Treat 127.0.0.1 as if it were a public address, so a local server can stand in for "the internet". */
const loopbackIsPublic = (ip: string) => (ip === '127.0.0.1' ? false : isBlockedAddress(ip));

t.test('fetches from a local server only with allowPrivate', async (t) => {
  const srv = await startServer((_req, res) => { res.setHeader('content-type', 'text/plain; charset=utf-8'); res.end('hello'); });
  t.teardown(srv.close);
  const r = await safeFetch(srv.url('/a?b=1'), { allowPrivate: true });
  t.equal(r.status, 200);
  t.equal(r.url, srv.url('/a?b=1'));
  t.equal(r.contentType, 'text/plain; charset=utf-8');
  t.equal(r.body.toString(), 'hello');
  t.equal(r.truncated, false);
  t.equal(srv.requests[0].url, '/a?b=1');
  t.match(srv.requests[0].headers['user-agent'], /agentsvc/);

  await t.rejects(safeFetch(srv.url('/')), isSsrf, 'literal loopback refused by default');
  await t.rejects(safeFetch(`http://localhost:${srv.port}/`), isSsrf, 'a name resolving to loopback refused');
  t.equal(srv.requests.length, 1, 'refused fetches never reached the server');
});

t.test('literal IP forms are refused before any connection', async (t) => {
  const srv = await startServer((_req, res) => res.end('should not be reached'));
  t.teardown(srv.close);
  const p = srv.port;
  const urls = [
    `http://2130706433:${p}/`, `http://0x7f000001:${p}/`, `http://0177.0.0.1:${p}/`, `http://0x7f.1:${p}/`, `http://127.1:${p}/`,
    `http://017700000001:${p}/`, `http://[::1]:${p}/`, `http://[::ffff:7f00:1]:${p}/`, `http://[::ffff:127.0.0.1]:${p}/`,
    `http://[0:0:0:0:0:ffff:7f00:1]:${p}/`, 'http://0.0.0.0/', `http://0:${p}/`, 'http://[::]/', 'http://169.254.169.254/latest/meta-data/',
    'http://[fe80::1]/', 'http://10.1.2.3/', 'http://100.64.0.1/', 'http://192.168.0.1/', 'http://172.16.5.4/', 'http://[fd00::1]/',
    'http://[::ffff:a9fe:a9fe]/', 'https://224.0.0.1/', `http://user:pw@127.0.0.1:${p}/`,
  ];
  for (const url of urls) await t.rejects(safeFetch(url, { timeoutMs: 2000 }), isSsrf, url);
  t.equal(srv.requests.length, 0);
});

t.test('only http and https', async (t) => {
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'gopher://example.com/', 'data:text/plain,hi', 'javascript:alert(1)', 'ws://example.com/']) {
    await t.rejects(safeFetch(url), isCode('unsupported_scheme'), url);
  }
  await t.rejects(safeFetch('not a url'), isCode('invalid_url'));
  await t.rejects(safeFetch('file:///etc/passwd'), /only http and https/);
});

t.test('redirects are followed and the final URL reported', async (t) => {
  const srv = await startServer((req, res) => {
    if (req.url === '/start') { res.writeHead(301, { location: '/middle' }); res.end('moved'); return; }
    if (req.url === '/middle') { res.writeHead(307, { location: `http://127.0.0.1:${(req.socket.localPort)}/end?x=1` }); res.end(); return; }
    if (req.url === '/loop') { res.writeHead(302, { location: '/loop' }); res.end(); return; }
    if (req.url === '/to-file') { res.writeHead(302, { location: 'file:///etc/passwd' }); res.end(); return; }
    res.end('the end');
  });
  t.teardown(srv.close);
  const r = await safeFetch(srv.url('/start'), { allowPrivate: true });
  t.equal(r.status, 200);
  t.equal(r.url, srv.url('/end?x=1'));
  t.equal(r.body.toString(), 'the end');
  t.same(srv.requests.map((q) => q.url), ['/start', '/middle', '/end?x=1']);

  await t.rejects(safeFetch(srv.url('/loop'), { allowPrivate: true, maxRedirects: 3 }), isCode('too_many_redirects'));
  await t.rejects(safeFetch(srv.url('/to-file'), { allowPrivate: true }), isCode('unsupported_scheme'), 'redirect to file: refused');
  await t.rejects(safeFetch(srv.url('/start'), { allowPrivate: true, maxRedirects: 0 }), isCode('too_many_redirects'), 'maxRedirects 0 follows none');
});

t.test('a redirect to a blocked address is refused, from an allowed public-looking start', async (t) => {
  const srv = await startServer((req, res) => {
    const targets: Record<string, string> = {
      '/to-metadata': 'http://169.254.169.254/latest/meta-data/',
      '/to-private-name': `http://intranet.example:${req.socket.localPort}/secret`,
      '/to-mapped': `http://[::ffff:127.0.0.2]:${req.socket.localPort}/`,
      '/to-decimal': `http://2130706434:${req.socket.localPort}/`,
      '/to-ok': `http://other.example:${req.socket.localPort}/fine`,
    };
    const to = targets[req.url ?? ''];
    if (to) { res.writeHead(302, { location: to }); res.end(); return; }
    res.end(`page ${req.url}`);
  });
  t.teardown(srv.close);
  const calls: string[] = [];
  const resolver = fakeResolver({ 'public.example': ['127.0.0.1'], 'other.example': ['127.0.0.1'], 'intranet.example': ['10.0.0.7'] }, calls);
  const policy = { resolver, isBlocked: loopbackIsPublic };
  const start = (path: string) => `http://public.example:${srv.port}${path}`;

  const ok = await safeFetch(start('/to-ok'), policy);
  t.equal(ok.body.toString(), 'page /fine', 'an allowed redirect works: the policy lets the start through');
  t.equal(ok.url, `http://other.example:${srv.port}/fine`);
  t.equal(srv.requests[0].headers.host, `public.example:${srv.port}`, 'Host header keeps the name');

  for (const path of ['/to-metadata', '/to-private-name', '/to-mapped', '/to-decimal']) {
    await t.rejects(safeFetch(start(path), policy), isSsrf, path);
  }
  t.notOk(srv.requests.some((q) => q.url === '/secret'), 'never connected to the private target');
  t.ok(calls.includes('intranet.example'), 'each hop is resolved and checked again');
  t.equal(srv.requests.length, 2 + 4, 'only the allowed hops reached the server');
});

t.test('names: any blocked address refuses, and the checked address is the one connected to', async (t) => {
  const srv = await startServer((_req, res) => res.end('pinned'));
  t.teardown(srv.close);
  const calls: string[] = [];
  const resolver = fakeResolver({ 'mixed.example': ['127.0.0.1', '10.0.0.1'], 'pinned.invalid': ['127.0.0.1'] }, calls);
  await t.rejects(safeFetch(`http://mixed.example:${srv.port}/`, { resolver, isBlocked: loopbackIsPublic }), isSsrf, 'one private address among public ones');
  // pinned.invalid cannot resolve in real DNS: success proves the socket used our checked answer, with one lookup only.
  calls.length = 0;
  const r = await safeFetch(`http://pinned.invalid:${srv.port}/`, { resolver, isBlocked: loopbackIsPublic });
  t.equal(r.body.toString(), 'pinned');
  t.same(calls, ['pinned.invalid'], 'resolved exactly once');
  await t.rejects(safeFetch(`http://nx.example:${srv.port}/`, { resolver, isBlocked: loopbackIsPublic }), isCode('dns'));
  await t.rejects(safeFetch(`http://nothing.invalid:${srv.port}/`, { resolver: async () => [] }), isCode('dns'));
});

t.test('size cap cuts the body and says so', async (t) => {
  const big = Buffer.alloc(200_000, 'a');
  const srv = await startServer((req, res) => {
    if (req.url === '/gz') { res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' }); res.end(gzipSync(big)); return; }
    if (req.url === '/exact') { res.end(Buffer.alloc(1000, 'b')); return; }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(big);
  });
  t.teardown(srv.close);
  const r = await safeFetch(srv.url('/big'), { allowPrivate: true, maxBytes: 1000 });
  t.equal(r.body.length, 1000);
  t.equal(r.truncated, true);
  const gz = await safeFetch(srv.url('/gz'), { allowPrivate: true, maxBytes: 5000 });
  t.equal(gz.body.length, 5000, 'the cap applies to decompressed bytes');
  t.equal(gz.body.toString('latin1'), 'a'.repeat(5000));
  t.equal(gz.truncated, true);
  const full = await safeFetch(srv.url('/gz'), { allowPrivate: true });
  t.equal(full.body.length, big.length, 'gzip is decoded');
  t.equal(full.truncated, false);
  const exact = await safeFetch(srv.url('/exact'), { allowPrivate: true, maxBytes: 1000 });
  t.equal(exact.truncated, false, 'a body of exactly maxBytes is whole');
});

t.test('the timeout bounds the whole fetch', async (t) => {
  const srv = await startServer((req, res) => {
    if (req.url === '/slow-body') { res.writeHead(200, { 'content-type': 'text/plain' }); res.write('partial'); return; } // never ends
    // '/hang': never answers at all
  });
  t.teardown(srv.close);
  for (const path of ['/hang', '/slow-body']) {
    const started = Date.now();
    await t.rejects(safeFetch(srv.url(path), { allowPrivate: true, timeoutMs: 300 }), isCode('timeout'), path);
    t.ok(Date.now() - started < 3000, `${path} gave up promptly`);
  }
  // A resolver that never answers is bounded too.
  await t.rejects(safeFetch('http://slow-dns.example/', { resolver: () => new Promise(() => {}), timeoutMs: 200 }), isCode('timeout'));
});

t.test('the caller can abort', async (t) => {
  const srv = await startServer(() => { /* never answers */ });
  t.teardown(srv.close);
  const ctl = new AbortController();
  const reason = new Error('stopped by user');
  setTimeout(() => ctl.abort(reason), 100);
  await t.rejects(safeFetch(srv.url('/'), { allowPrivate: true, signal: ctl.signal }), { message: 'stopped by user' });
  const pre = new AbortController();
  pre.abort(reason);
  await t.rejects(safeFetch(srv.url('/'), { allowPrivate: true, signal: pre.signal }), { message: 'stopped by user' });
});

t.test('credentials do not follow a redirect to another origin', async (t) => {
  const other = await startServer((_req, res) => res.end('other'));
  t.teardown(other.close);
  const srv = await startServer((_req, res) => { res.writeHead(302, { location: other.url('/x') }); res.end(); });
  t.teardown(srv.close);
  await safeFetch(srv.url('/'), { allowPrivate: true, headers: { Authorization: 'Bearer secret', 'X-Keep': 'yes' } });
  t.equal(srv.requests[0].headers.authorization, 'Bearer secret');
  t.equal(other.requests[0].headers.authorization, undefined);
  t.equal(other.requests[0].headers['x-keep'], 'yes');
});

t.test('HTTP errors are returned, not thrown; connection errors are FetchErrors', async (t) => {
  const srv = await startServer((_req, res) => { res.writeHead(404, { 'content-type': 'text/html' }); res.end('<h1>nope</h1>'); });
  const port = srv.port;
  const r = await safeFetch(srv.url('/missing'), { allowPrivate: true });
  t.equal(r.status, 404);
  await srv.close();
  await t.rejects(safeFetch(`http://127.0.0.1:${port}/`, { allowPrivate: true }), isCode('network'));
});

t.test('a connection dropped mid-body is a FetchError, also through the gzip decoder', async (t) => {
  const srv = await startServer((req, res) => {
    const gz = req.url === '/gz';
    res.writeHead(200, gz ? { 'content-encoding': 'gzip' } : { 'content-length': '100000' });
    res.write(gz ? gzipSync(Buffer.alloc(100_000, 'z')).subarray(0, 200) : 'partial');
    setTimeout(() => res.socket?.destroy(), 50);
  });
  t.teardown(srv.close);
  await t.rejects(safeFetch(srv.url('/plain'), { allowPrivate: true }), { name: 'FetchError' });
  await t.rejects(safeFetch(srv.url('/gz'), { allowPrivate: true }), { name: 'FetchError' });
});
