import t from 'tap';
import { Webhooks } from '../../src/features/webhooks/service.js';
import type { HookEvents } from '../../src/core/engine/hooks.js';
import type { NodeSignal } from '../../src/platform/infra/event-bus.js';

/**
 * A run's end with no webhook subscribed to its event reads nothing more: every run ends, and the
 * session read for its intent (an entity load) was the costliest step of a run's end. On an
 * install where nobody has an enabled webhook, it reads nothing at all.
 */
async function webhooks(subscribed: unknown[], owners: { user_id: string; scope: string }[] = subscribed as never) {
  const statements: string[] = [];
  const owned: string[] = [];
  const signals: string[] = [];
  const listeners = new Set<(sig: NodeSignal) => void>();
  const db = {
    sql: async (q: string) => {
      if (/select distinct user_id/.test(q)) return owners.map((w) => ({ user_id: w.user_id, install: w.scope === 'install' }));
      statements.push(q.trim().split(/\s+/).slice(0, 4).join(' '));
      if (/^insert into webhooks /.test(q)) return [{ id: 'wh_new', user_id: 'u1', scope: 'user', events: ['run.completed'], enabled: true, secret: 'whsec_abcd', failing_since: null, disabled_reason: null, created_at: new Date(), updated_at: new Date() }];
      return /from webhooks/.test(q) ? subscribed : [];
    },
  };
  const w = new Webhooks({
    db: db as never,
    sessions: {
      getOwned: async (_u: string, id: string) => {
        owned.push(id);
        return { intent: 'the intent' } as never;
      },
    },
    delayed: { handle: () => {}, at: async () => {} } as never,
    conversation: { turns: async () => [] },
    logger: { info() {}, warn() {}, error() {} } as never,
    isAdmin: async () => false,
    allowPrivate: true,
    retryBaseMs: 1000,
    bus: {
      signal: (sig) => {
        signals.push(sig.name);
        for (const l of listeners) l(sig);
      },
      onSignal: (fn) => {
        listeners.add(fn);
        return () => void listeners.delete(fn);
      },
    },
  });
  await w.start();
  t.teardown(() => w.close());
  return { w, statements, owned, signals };
}

const ended = (finish_reason = 'stop'): HookEvents['run.ended'] =>
  ({ run: { runId: 'run_1', userId: 'u1', sessionId: 'sess_1', origin: 'chat' }, status: 'completed', finish_reason, error: null }) as never;

t.test('no enabled webhook on the install: no query, no session read', async (t) => {
  const { w, statements, owned } = await webhooks([]);
  await w.onRunEnded(ended());
  await w.onRunEnded(ended('budget'));
  t.same(statements, []);
  t.same(owned, ['sess_1'], 'budget.exceeded is still looked up (and finds no webhook)');
});

t.test("another user's webhook only: no query for this user's run", async (t) => {
  const { w, statements } = await webhooks([{ user_id: 'u2', scope: 'user' }]);
  await w.onRunEnded(ended());
  t.same(statements, []);
});

t.test('an install webhook: every user\'s run end asks which webhooks want it', async (t) => {
  const { w, statements } = await webhooks([], [{ user_id: 'admin', scope: 'install' }]);
  await w.onRunEnded(ended());
  t.same(statements, ['select * from webhooks']);
});

t.test('a webhook created: a signal to every node, and the next run end asks', async (t) => {
  const rows: { user_id: string; scope: string }[] = [];
  const { w, statements, signals } = await webhooks([], rows);
  rows.push({ user_id: 'u1', scope: 'user' });
  await w.create('u1', { url: 'http://127.0.0.1:9/hook', events: ['run.completed'], scope: 'user' } as never);
  t.same(signals, ['webhooks.changed']);
  await w.onRunEnded(ended());
  t.same(statements.filter((s) => s.startsWith('select * from webhooks')), ['select * from webhooks'], 'asked, before and after the new read answered');
});

t.test('a webhook subscribed: the session is read and a delivery queued', async (t) => {
  const { w, statements, owned } = await webhooks([{ id: 'wh_1', user_id: 'u1', scope: 'user', events: ['run.completed'], enabled: true } as never]);
  await w.onRunEnded(ended());
  t.same(owned, ['sess_1']);
  t.same(statements, ['select * from webhooks', 'insert into webhook_deliveries (id,']);
});

t.test('a run a budget stopped still tells budget.exceeded subscribers, with no run.completed one', async (t) => {
  const { w, statements, owned } = await webhooks([], [{ user_id: 'u1', scope: 'user' }]);
  await w.onRunEnded(ended('budget'));
  t.same(owned, ['sess_1'], 'read: budget.exceeded is looked up after it');
  t.same(statements, ['select * from webhooks', 'select * from webhooks']);
});
