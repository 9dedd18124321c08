import t from 'tap';
import { type UsageRecord, UsageStore } from '../../src/features/usage/store.js';

/** Model calls recorded at the same moment (runs that end together) go in one insert. */
const call = (n: number): UsageRecord => ({
  user_id: 'u1',
  session_id: `sess_${n}`,
  turn_id: `turn_${n}`,
  run_id: `run_${n}`,
  model: 'm',
  outcome: 'ok',
  purpose: 'turn',
  input_tokens: n,
  output_tokens: 1,
  cached_input_tokens: 0,
  cost: null,
  estimated: false,
  attempts: 1,
  fallback_from: null,
  started_at: new Date(0),
  duration_ms: 5,
  ttft_ms: null,
  credential: 'install',
});

t.test('three calls recorded in one tick: one insert of three rows, in order', async (t) => {
  const statements: { rows: number; values: unknown[] }[] = [];
  const db = {
    sql: async (q: string, p: unknown[] = []) => {
      statements.push({ rows: q.match(/\(\?/g)?.length ?? 0, values: p });
      return [];
    },
  };
  const store = new UsageStore(db as never);
  await Promise.all([store.insert(call(1)), store.insert(call(2)), store.insert(call(3))]);
  t.equal(statements.length, 1);
  t.equal(statements[0].rows, 3);
  t.same(
    statements[0].values.filter((v) => typeof v === 'string' && v.startsWith('sess_')),
    ['sess_1', 'sess_2', 'sess_3'],
  );
});
