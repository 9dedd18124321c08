import t from 'tap';
import { connect as tcp } from 'node:net';
import { build, type TestApp } from '../helpers/app.js';
import { createSession } from '../helpers/chat.js';
import { deadline } from '../helpers/chaos.js';
import { pace } from '../helpers/wait.js';

/**
 * docs/errors.md: bad input never yields a 5xx and never hangs a connection. A body nested deeper than
 * 64 levels is a 422 (it was a RangeError 500 in the recursive walks), and a body that stops
 * arriving is answered 408 within 10 s (it held its connection ~126 s); one that keeps arriving,
 * slowly, is not cut.
 */

const parts = (s: string, n: number) => Array.from({ length: n }, (_, i) => s.slice(Math.ceil((i * s.length) / n), Math.ceil(((i + 1) * s.length) / n)));
const nested = (depth: number, leaf = '1') => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);

/** A raw HTTP request over TCP: the headers, then `chunks` of the body with `gapMs` between them. */
function rawRequest(app: TestApp, path: string, length: number, chunks: string[], gapMs: number): Promise<{ status: number; ms: number; body: string }> {
  const url = new URL(app.url);
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const s = tcp(Number(url.port), url.hostname);
    let got = '';
    s.on('data', (c) => {
      got += c;
      const m = /^HTTP\/1\.1 (\d+)/.exec(got);
      if (m && got.includes('\r\n\r\n') && got.endsWith('}')) {
        s.destroy();
        resolve({ status: Number(m[1]), ms: Date.now() - t0, body: got.slice(got.indexOf('\r\n\r\n') + 4) });
      }
    });
    s.on('error', reject);
    s.on('connect', async () => {
      s.write(`PUT ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${app.adminKey}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`);
      for (const [i, c] of chunks.entries()) {
        if (i) await pace(gapMs, 'a slow client: the gap between two chunks of its body');

        if (!s.destroyed) s.write(c);
      }
    });
  });
}

t.test('a body nested deeper than 64 levels: 422 on every JSON route, nothing stored', async (t) => {
  const app = await build(t);
  const sid = await createSession(app);
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const extra = (body: string) => app.api(`/api/sessions/${sid}/upset_extra_info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  for (const [name, send] of [
    ['upset_extra_info', (b: string) => extra(b)],
    ['frontend_config', (b: string) => app.api('/api/frontend_config/deep', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: b })],
    ['annotations', (b: string) => app.api(`/api/payloads/${msgs[0]?.id ?? 'entry_x'}/annotations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b })],
  ] as const) {
    for (const depth of [65, 5000]) {
      const res = await send(`{"extra":${nested(depth)},"label":"x","data":${nested(depth)}}`);
      t.equal(res.status, 422, `${name}, ${depth} levels`);
      t.match(await res.json(), { code: 'VALIDATION_ERROR', detail: [{ msg: /deeper than 64/ }] });
    }
  }
  t.equal((await app.api('/api/frontend_config/deep')).status, 404, 'no frontend config written');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).extra ?? null, null, 'no extra info stored');
  // 64 levels, brackets inside strings and escaped quotes are no nesting: accepted.
  const ok = await extra(`{"extra":{"k":${nested(62)},"s":"[[[[\\"{{{{"}}`);
  t.equal(ok.status, 200, await ok.text());
});

t.test('a body that stops arriving: 408 within 10 s; a slow one that keeps arriving is not cut', async (t) => {
  const app = await build(t);
  const body = JSON.stringify({ intent: 'slow body' });
  const [stalled, slow] = await Promise.all([
    // Half the declared body, then nothing.
    deadline(rawRequest(app, '/api/frontend_config/stalled', body.length * 2, [body], 0), 15_000, 'an answer to a stalled body'),
    // The whole body in 5 parts, 3 s apart (12 s in all: longer than the pause allowed).
    deadline(rawRequest(app, '/api/frontend_config/slow', body.length, parts(body, 5), 3000), 30_000, 'a slow body'),
  ]);
  t.equal(stalled.status, 408, stalled.body);
  t.ok(stalled.ms < 10_000, `answered in ${stalled.ms} ms`);
  t.match(JSON.parse(stalled.body), { code: 'REQUEST_TIMEOUT' });
  t.equal(slow.status, 200, `slow body: ${slow.body}`);
  t.ok(slow.ms >= 12_000, `the slow body took ${slow.ms} ms`);
});
