import { connect } from 'node:net';
import t, { type Test } from 'tap';
import { build } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

/** A raw TCP peer of the app that reads everything (no backpressure on the server) and records it. */
async function rawPeer(t: Test, port: string) {
  const peer = connect(Number(port), '127.0.0.1');
  t.teardown(() => peer.destroy());
  const got = { heard: '' };
  peer.on('data', (d: Buffer) => (got.heard += d.toString('latin1')));
  peer.on('error', () => {});
  await new Promise<void>((r) => peer.once('connect', () => r()));
  return { peer, got, closed: new Promise<void>((r) => peer.once('close', () => r())) };
}

// A WebSocket peer that never answers the close handshake (a frozen tab, a busy machine) does not
// hold the shutdown: the gateway cuts it after its grace (docs/operations.md, "Shutdown").

t.test('a WebSocket that never answers the close handshake: the shutdown is still clean, in seconds', async (t) => {
  const app = await build(t);
  const { port } = new URL(app.url);
  // Reads everything, answers nothing.
  const { peer, got, closed } = await rawPeer(t, port);
  peer.write(
    `GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await waitFor(() => got.heard.includes('\r\n\r\n'), { what: 'the answer to the WebSocket upgrade' });
  t.match(got.heard, /^HTTP\/1\.1 101 /, 'upgraded');
  // ws waits 30 s for the peer's close frame; the limit here is 10 s.
  const stopped = await app.service.stop(10_000);
  t.same(stopped, { outcome: 'clean', failed: [] }, `stopped cleanly (${JSON.stringify(stopped)})`);
  await closed;
  t.equal(peer.readyState, 'closed', 'the server closed the silent connection');
});

// A keep-alive HTTP connection whose request is still being answered when the stop begins goes
// idle after it: the shutdown ends it then, instead of waiting out keepAliveTimeout (72 s).
t.test('a keep-alive connection busy when the stop begins: closed once its answer is sent', async (t) => {
  const app = await build(t);
  const { port } = new URL(app.url);
  const { peer, got, closed } = await rawPeer(t, port);
  // The body's last byte is held back: the request is in flight when the stop starts.
  peer.write(`POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${app.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{`);
  const stopping = app.service.stop(10_000);
  const refused = () =>
    new Promise<boolean>((r) => {
      const probe = connect(Number(port), '127.0.0.1');
      probe.once('connect', () => {
        probe.destroy();
        r(false);
      });
      probe.once('error', () => r(true));
    });
  await waitFor(refused, { what: 'the server to stop taking connections' });
  peer.write('}');
  await waitFor(() => got.heard.includes('\r\n\r\n'), { what: 'the answer to the request in flight' });
  t.match(got.heard, /^HTTP\/1\.1 \d{3} /, `answered (${got.heard.split('\r\n')[0]})`);
  const stopped = await stopping;
  t.same(stopped, { outcome: 'clean', failed: [] }, `stopped cleanly (${JSON.stringify(stopped)})`);
  await closed;
  t.equal(peer.readyState, 'closed', 'the server closed the kept-alive connection');
});
