import t from 'tap';
import { build } from '../helpers/app.js';
import { next as once } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

t.test('Socket.IO connections per user are capped with a clear reason', async (t) => {
  const app = await build(t, { AGENTSVC_MAX_SOCKETS_PER_USER: '2' });
  const bob = await app.newUser('bob');
  const a = app.socket();
  const b = app.socket();
  await Promise.all([once(a, 'connect'), once(b, 'connect')]);

  const third = app.socket();
  const [err] = await once(third, 'connect_error');
  t.match(err.message, /too many connections/);
  t.match(err.message, /AGENTSVC_MAX_SOCKETS_PER_USER/);
  t.equal(err.data?.code, 'TOO_MANY_CONNECTIONS');
  t.ok(a.connected && b.connected, 'the open ones stay');

  // Racing handshakes cannot get past the cap either: of 6 at once, none of admin's connects.
  const burst = Array.from({ length: 6 }, () => app.socket());
  const outcomes = await Promise.all(
    burst.map(
      (s) =>
        new Promise<string>((resolve) => {
          s.once('connect_error', (e: Error & { data?: { code?: string } }) => resolve(e.data?.code ?? e.message));
          s.once('system:error', (e: { code: string }) => s.once('disconnect', () => resolve(e.code)));
          s.once('disconnect', () => resolve('disconnected'));
        }),
    ),
  );
  t.same(new Set(outcomes), new Set(['TOO_MANY_CONNECTIONS']), `every extra socket is refused: ${outcomes}`);

  // Other users are unaffected, and a closed socket frees its slot.
  const other = app.socket(bob.key);
  await once(other, 'connect');
  const gone = a.id!;
  a.disconnect();
  // socket.io drops the socket from its namespace and runs its disconnect handlers in one step.
  await waitFor(() => !app.service.io.sockets.sockets.has(gone), { what: 'the server to see the disconnect' });

  const again = app.socket();
  await once(again, 'connect');
  t.ok(again.connected, 'a slot freed by a disconnect can be reused');
});

t.test('REST requests per user are rate limited with 429 and Retry-After', async (t) => {
  const app = await build(t, { AGENTSVC_RATE_LIMIT_PER_MINUTE: '30' });
  const bob = await app.newUser('bob');
  const statuses: number[] = [];
  let limited: Response | undefined;
  for (let i = 0; i < 40; i++) {
    const res = await app.api('/api/auth/me');
    statuses.push(res.status);
    if (res.status === 429) limited ??= res;
    else await res.arrayBuffer();
  }
  t.same(statuses, [...Array(30).fill(200), ...Array(10).fill(429)], 'the minute allowance, then 429');
  const wait = Number(limited!.headers.get('retry-after'));
  t.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After is the rest of the minute: ${wait}`);
  t.same(await limited!.json(), {
    detail: `too many requests for this user; retry after ${wait}s (AGENTSVC_RATE_LIMIT_PER_MINUTE)`,
    code: 'RATE_LIMITED',
  });
  t.equal((await app.api('/api/auth/me', { key: bob.key })).status, 200, 'another user has their own allowance');
  t.equal((await app.api('/api/health', { key: null })).status, 200, 'public routes are not counted against anyone');
  t.equal((await app.api('/api/auth/me', { key: 'sk-agentsvc-v2-nope' })).status, 401, 'no key: 401 before any limit');
});
