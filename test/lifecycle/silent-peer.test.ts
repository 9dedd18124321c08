import { connect } from 'node:net';
import t from 'tap';
import { build } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

// A WebSocket peer that never answers the close handshake (a frozen tab, a busy machine) does not
// hold the shutdown: the gateway cuts it after its grace (docs/operations.md, "Shutdown").

t.test('a WebSocket that never answers the close handshake: the shutdown is still clean, in seconds', async (t) => {
  const app = await build(t);
  const { port } = new URL(app.url);
  const peer = connect(Number(port), '127.0.0.1');
  t.teardown(() => peer.destroy());
  let heard = '';
  // Read everything (no backpressure on the server), answer nothing.
  peer.on('data', (d: Buffer) => (heard += d.toString('latin1')));
  peer.on('error', () => {});
  await new Promise<void>((r) => peer.once('connect', () => r()));
  peer.write(
    `GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await waitFor(() => heard.includes('\r\n\r\n'), { what: 'the answer to the WebSocket upgrade' });
  t.match(heard, /^HTTP\/1\.1 101 /, 'upgraded');
  const closed = new Promise<void>((r) => peer.once('close', () => r()));
  // ws waits 30 s for the peer's close frame; the limit here is 10 s.
  const stopped = await app.service.stop(10_000);
  t.same(stopped, { outcome: 'clean', failed: [] }, `stopped cleanly (${JSON.stringify(stopped)})`);
  await closed;
  t.equal(peer.readyState, 'closed', 'the server closed the silent connection');
});
