import t from 'tap';
import { Webhooks } from '../../src/features/webhooks/service.js';
import type { HookEvents } from '../../src/core/engine/hooks.js';

/**
 * A run's end with no webhook subscribed to its event reads nothing more: every run ends, and the
 * session read for its intent (an entity load) was the costliest step of a run's end.
 */
function webhooks(subscribed: unknown[]) {
  const statements: string[] = [];
  const owned: string[] = [];
  const db = {
    sql: async (q: string) => {
      statements.push(q.trim().split(/\s+/).slice(0, 4).join(' '));
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
  });
  return { w, statements, owned };
}

const ended = (finish_reason = 'stop'): HookEvents['run.ended'] =>
  ({ run: { runId: 'run_1', userId: 'u1', sessionId: 'sess_1', origin: 'chat' }, status: 'completed', finish_reason, error: null }) as never;

t.test('no webhook subscribed: one query, no session read', async (t) => {
  const { w, statements, owned } = webhooks([]);
  await w.onRunEnded(ended());
  t.same(statements, ['select * from webhooks']);
  t.same(owned, []);
});

t.test('a webhook subscribed: the session is read and a delivery queued', async (t) => {
  const { w, statements, owned } = webhooks([{ id: 'wh_1', user_id: 'u1', scope: 'user', events: ['run.completed'], enabled: true }]);
  await w.onRunEnded(ended());
  t.same(owned, ['sess_1']);
  t.same(statements, ['select * from webhooks', 'insert into webhook_deliveries (id,']);
});

t.test('a run a budget stopped still tells budget.exceeded subscribers, with no run.completed one', async (t) => {
  const { w, statements, owned } = webhooks([]);
  await w.onRunEnded(ended('budget'));
  t.same(owned, ['sess_1'], 'read: budget.exceeded is looked up after it');
  t.same(statements, ['select * from webhooks', 'select * from webhooks']);
});
