import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import { EgressProxy, parseAuthority, type EgressTarget } from '../../src/features/egress/proxy.js';

// The egress proxy from the host side: one resolution per connection, the decision sees the name
// and every address, the connection goes to the address checked (no second lookup: rebinding),
// and requests it cannot serve get a clear 400, never a hang.

const seen: { headers: http.IncomingHttpHeaders; url?: string }[] = [];
const origin = http.createServer((req, res) => {
  seen.push({ headers: req.headers, url: req.url });
  res.end(`hello ${req.url}\n`);
});
await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
t.teardown(() => origin.close());
const PORT = (origin.address() as net.AddressInfo).port;

let lookups = 0;
const asked: EgressTarget[] = [];
const proxy = new EgressProxy({
  // rebind.test answers the test server first and 127.0.0.9 (nothing listens there) after: a proxy
  // that looked the name up again before connecting would fail to connect.
  resolver: async (name) => {
    lookups++;
    if (name === 'rebind.test') return [{ address: lookups === 1 ? '127.0.0.1' : '127.0.0.9', family: 4 }];
    if (name === 'two.test') return [{ address: '127.0.0.1', family: 4 }, { address: '127.0.0.2', family: 4 }];
    if (name === 'fallback.test') return [{ address: '127.0.0.9', family: 4 }, { address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error('no such host'), { code: 'ENOTFOUND' });
  },
});
t.teardown(() => proxy.close());
const lease = await proxy.open({ userId: 'u1', sessionId: 's1', toolCallId: 'tc1' });

function viaProxy(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port: lease.port, path, headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => done({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', fail);
    req.end();
  });
}

function connect(authority: string): Promise<{ status: number; socket: net.Socket; body: string }> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port: lease.port, method: 'CONNECT', path: authority });
    req.on('connect', (res, socket, head) => {
      if (res.statusCode !== 200) {
        let body = head.toString();
        socket.on('data', (d) => (body += d));
        socket.on('end', () => done({ status: res.statusCode!, socket, body }));
        return;
      }
      done({ status: 200, socket, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => done({ status: res.statusCode!, socket: res.socket, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

t.test('not bound to a policy yet: every connection is refused', async (t) => {
  const r = await viaProxy(`http://127.0.0.1:${PORT}/x`);
  t.equal(r.status, 403);
  t.equal(r.body, 'the egress proxy is not ready yet\n');
  t.equal(r.headers['x-agentsvc-egress'], 'denied');
  t.same(seen, []);
});

t.test('plain HTTP: one lookup, the checked address, hop headers dropped', async (t) => {
  proxy.bind(async (_who, target) => {
    asked.push(target);
    return target.addresses.includes('127.0.0.2') ? { allow: false, message: 'no .2' } : { allow: true };
  });
  lookups = 0;
  const r = await viaProxy(`http://rebind.test:${PORT}/a?b=1`, { 'proxy-authorization': 'Basic eDp5', 'x-kept': 'yes' });
  t.equal(r.status, 200);
  t.equal(r.body, 'hello /a?b=1\n');
  t.equal(lookups, 1, 'resolved once');
  t.same(asked.at(-1), { host: 'rebind.test', port: PORT, addresses: ['127.0.0.1'] });
  const got = seen.at(-1)!;
  t.equal(got.headers.host, `rebind.test:${PORT}`, 'the origin sees the host asked for');
  t.equal(got.headers['x-kept'], 'yes');
  t.notOk(got.headers['proxy-authorization'], 'proxy credentials never reach the origin');
  const two = await viaProxy(`http://two.test:${PORT}/`);
  t.equal(two.status, 403, 'refused on its second address');
  t.equal(two.body, 'no .2\n');
  const fb = await viaProxy(`http://fallback.test:${PORT}/f`);
  t.equal(fb.body, 'hello /f\n', 'the next judged address when the first does not answer');
  t.same(asked.at(-1)?.addresses, ['127.0.0.9', '127.0.0.1'], 'both were judged');
  const nx = await viaProxy(`http://nowhere.test:${PORT}/`);
  t.equal(nx.status, 502);
  t.equal(nx.body, 'could not resolve host nowhere.test\n');
});

t.test('CONNECT tunnels to the checked address; refusals are answered', async (t) => {
  lookups = 0;
  const ok = await connect(`rebind.test:${PORT}`);
  t.equal(ok.status, 200);
  t.equal(lookups, 1);
  const answer = await new Promise<string>((done) => {
    let text = '';
    ok.socket.on('data', (d) => (text += d));
    ok.socket.on('end', () => done(text));
    ok.socket.write(`GET /t HTTP/1.0\r\nHost: rebind.test\r\n\r\n`);
  });
  t.match(answer, /^HTTP\/1\.1 200 OK[\s\S]*hello \/t\n$/);
  const no = await connect(`two.test:${PORT}`);
  t.equal(no.status, 403);
  t.equal(no.body, 'no .2\n');
  const v6 = await connect('[::1]:1');
  t.equal(asked.at(-1)?.host, '::1', 'an IPv6 literal is judged without brackets');
  t.equal(v6.status, 502);
});

t.test('what the proxy does not serve gets a 400 naming why', async (t) => {
  const origin = await viaProxy('/relative');
  t.equal(origin.status, 400);
  t.match(origin.body, /this is an egress proxy/);
  const https = await viaProxy('https://rebind.test/');
  t.equal(https.status, 400);
  t.match(https.body, /https goes through CONNECT/);
  for (const bad of ['nohost', 'host:0', 'host:99999', 'host:80/x', 'user@host:80']) {
    t.equal((await connect(bad)).status, 400, bad);
  }
  t.same(parseAuthority('Example.com:443'), { host: 'Example.com', port: 443 });
  t.same(parseAuthority('[2001:db8::1]:8443'), { host: '[2001:db8::1]', port: 8443 });
});

t.test("a shared lease: an exec's credential names it, else the newest exec", async (t) => {
  const shared = await proxy.open({ userId: 'u3', sessionId: null, toolCallId: null });
  const who: (string | null)[] = [];
  proxy.bind(async (w) => {
    who.push(w.toolCallId);
    return { allow: true };
  });
  const first = shared.credential({ userId: 'u3', sessionId: 's3', toolCallId: 'tc_first' });
  shared.identify({ userId: 'u3', sessionId: 's3', toolCallId: 'tc_newest' });
  const ask = (auth?: string) =>
    new Promise<number>((done, fail) => {
      const headers: Record<string, string> = auth ? { 'proxy-authorization': `Basic ${Buffer.from(auth).toString('base64')}` } : {};
      http.get({ host: '127.0.0.1', port: shared.port, path: `http://127.0.0.1:${PORT}/`, headers, agent: false }, (r) => r.resume().on('end', () => done(r.statusCode!))).on('error', fail);
    });
  t.equal(await ask(`${first.user}:`), 200);
  t.equal(await ask(), 200);
  t.equal(await ask('xforged:'), 200);
  first.release();
  t.equal(await ask(`${first.user}:`), 200);
  t.same(who, ['tc_first', 'tc_newest', 'tc_newest', 'tc_newest'], 'a released or unknown credential falls back to the newest exec');
  const elsewhere = lease.credential({ userId: 'u1', sessionId: 's1', toolCallId: 'tc_other_lease' });
  t.equal(await ask(`${elsewhere.user}:`), 200);
  t.equal(who.at(-1), 'tc_newest', "another lease's credential moves nothing");
  shared.close();
});

t.test('a closed lease listens no more', async (t) => {
  const other = await proxy.open({ userId: 'u2', sessionId: null, toolCallId: null });
  const port = other.port;
  other.close();
  const err = await new Promise<NodeJS.ErrnoException>((done) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', done);
    s.on('connect', () => done(Object.assign(new Error('connected'), { code: 'CONNECTED' })));
  });
  t.equal(err.code, 'ECONNREFUSED');
});
