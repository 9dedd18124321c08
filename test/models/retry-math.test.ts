import t from 'tap';
import { BACKOFF_CAP_MS, backoffMs, sleepUnlessAborted } from '../../src/core/models/backoff.js';
import { retryAfterMs } from '../../src/core/models/openai-stream.js';

/**
 * When the model router retries (docs/models-and-usage.md), without a service: the backoff with its
 * jitter and cap, a server's retry-after in its three forms, and a wait that a stop ends at once.
 */

t.test('backoffMs: 0.5 s doubling per retry, jittered between half and all of the step, capped', async (t) => {
  t.same(
    [1, 2, 3, 4].map((n) => backoffMs(n, () => 1)),
    [500, 1000, 2000, 4000],
    'the whole step at the top of the jitter',
  );
  t.same(
    [1, 2, 3].map((n) => backoffMs(n, () => 0)),
    [250, 500, 1000],
    'half of it at the bottom',
  );
  t.equal(backoffMs(3, () => 0.5), 1500);
  t.equal(backoffMs(7, () => 1), BACKOFF_CAP_MS, '500 * 2^6 = 32 s is capped at 20 s');
  t.equal(backoffMs(40, () => 0), BACKOFF_CAP_MS / 2, 'far retries stay at the cap');
  t.equal(backoffMs(0, () => 1), 500, 'a retry number below 1 counts as the first');
});

t.test('retryAfterMs: retry-after-ms first, then seconds or an HTTP date, at most a minute', async (t) => {
  const h = (o: Record<string, string>) => new Headers(o);
  const now = Date.parse('2026-11-27T12:00:00Z');
  t.equal(retryAfterMs(h({ 'retry-after-ms': '1500', 'retry-after': '9' })), 1500, 'milliseconds win over seconds');
  t.equal(retryAfterMs(h({ 'retry-after': '2' })), 2000);
  t.equal(retryAfterMs(h({ 'retry-after': '0.25' })), 250);
  t.equal(retryAfterMs(h({ 'retry-after': '3600' })), 60_000, 'an hour is capped at a minute');
  t.equal(retryAfterMs(h({ 'retry-after': 'Fri, 27 Nov 2026 12:00:30 GMT' }), now), 30_000, 'an HTTP date: the time until it');
  t.equal(retryAfterMs(h({ 'retry-after': 'Fri, 27 Nov 2026 11:59:00 GMT' }), now), 0, 'a date passed: retry now');
  t.equal(retryAfterMs(h({ 'retry-after': 'soon' })), null, 'unreadable: no hint');
  t.equal(retryAfterMs(h({})), null);
  t.equal(retryAfterMs(undefined), null);
});

t.test('sleepUnlessAborted: an abort ends the wait with its reason, at once', async (t) => {
  const stopped = new AbortController();
  stopped.abort(new Error('chat:stop'));
  await t.rejects(sleepUnlessAborted(60_000, stopped.signal), { message: 'chat:stop' }, 'already stopped: no wait at all');
  t.equal(await sleepUnlessAborted(0, new AbortController().signal), undefined, 'no wait asked: done');
  const ctl = new AbortController();
  const t0 = Date.now();
  const waiting = sleepUnlessAborted(60_000, ctl.signal);
  ctl.abort(new Error('chat:stop'));
  await t.rejects(waiting, { message: 'chat:stop' });
  t.ok(Date.now() - t0 < 1000, `a minute's wait ended by the stop (${Date.now() - t0} ms)`);
});
