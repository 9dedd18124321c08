/**
 * What the CLI says when it cannot go on: a service that does not answer (the fix depends on where
 * its address came from) and a mistyped command (the nearest one is named). No service needed.
 */
import t from 'tap';
import { closestCommand } from '../../src/cli/not-found.js';
import { Api } from '../../src/cli/terminal/api.js';

const refused = () => new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });

t.test('a home without run/url: the message says to point at the right home', async (t) => {
  const api = new Api({ url: 'http://127.0.0.1:8080', urlFrom: 'default', key: null, keyFrom: 'none', home: '/srv/agentsvc' });
  t.equal(
    api.down(refused()).message,
    'cannot reach agentsvc at http://127.0.0.1:8080 (ECONNREFUSED); is it running? no `agentsvc up` has recorded its address in /srv/agentsvc: if one runs with another home, set AGENTSVC_HOME or pass --home (or --url); else start it with `agentsvc up`',
  );
  const recorded = new Api({ url: 'http://127.0.0.1:9', urlFrom: '/srv/agentsvc/run/url', key: null, keyFrom: 'none', home: '/srv/agentsvc' });
  t.equal(recorded.down(refused()).message, 'cannot reach agentsvc at http://127.0.0.1:9 (ECONNREFUSED); is it running? start it with `agentsvc up`, or pass --url');
});

t.test('an unknown command names the closest one, or none when nothing is near', async (t) => {
  const ids = ['up', 'keys:create', 'keys:list', 'sessions:list', 'sessions:show', 'keys', 'sessions', 'logs', 'usage'];
  t.equal(closestCommand('sesions:list', ids), 'sessions:list');
  t.equal(closestCommand('kyes', ids), 'keys');
  t.equal(closestCommand('upp', ids), 'up');
  t.equal(closestCommand('zzzzzzzz', ids), null);
});
