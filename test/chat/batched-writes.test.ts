import t from 'tap';
import { TurnStore } from '../../src/core/conversation/turn-store.js';
import { newTurn } from '../../src/core/engine/run-state.js';
import { RunStore } from '../../src/core/engine/run-store.js';

/**
 * A run's writes of the same moment share a statement (TurnStore and RunStore, through
 * WriteBatcher): the runs that start together insert their assistant turns in one round trip, and
 * the runs that end together release their sessions in one.
 */
function store(fail?: (rows: { id: string }[]) => boolean) {
  const statements: { q: string; rows: Record<string, unknown>[] }[] = [];
  const db = {
    sql: async (q: string, p: unknown[] = []) => {
      const rows = JSON.parse(String(p[0])) as { id: string }[];
      statements.push({ q: q.trim().split(/\s+/).slice(0, 3).join(' '), rows });
      if (fail?.(rows)) throw Object.assign(new Error('insert or update on table "turns" violates foreign key constraint'), { code: '23503' });
      return [];
    },
  };
  return { turns: new TurnStore(db as never), statements };
}

const turn = (sequence: number) => newTurn({ role: 'assistant', loopId: 'root', parent: null, status: 'streaming', sequence, model: 'm', contextWindow: 1000 });

t.test('inserts of one tick: one statement, every row', async (t) => {
  const { turns, statements } = store();
  const a = turn(1);
  const b = turn(1);
  const c = turn(3);
  await Promise.all([turns.insert('sess_a', a), turns.insert('sess_b', b), turns.insert('sess_c', c, 'hello')]);
  t.equal(statements.length, 1);
  t.equal(statements[0].q, 'insert into turns');
  t.same(
    statements[0].rows.map((r) => [r.id, r.session_id, r.sequence, r.content]),
    [
      [a.id, 'sess_a', 1, null],
      [b.id, 'sess_b', 1, null],
      [c.id, 'sess_c', 3, 'hello'],
    ],
  );
});

t.test('updates of one tick: one statement; a turn updated twice in it is written once, as last', async (t) => {
  const { turns, statements } = store();
  const a = turn(1);
  const b = turn(2);
  const first = { ...a, status: 'streaming' as const };
  a.status = 'completed';
  a.blocks = [{ type: 'text', content: 'the answer' }] as never;
  await Promise.all([turns.update(first), turns.update(b), turns.update(a)]);
  t.equal(statements.length, 1);
  t.equal(statements[0].q, 'update turns t');
  t.same(
    statements[0].rows.map((r) => [r.id, r.status, r.text]),
    [
      [a.id, 'completed', 'the answer'],
      [b.id, 'streaming', ''],
    ],
  );
});

t.test('a batch that fails is written again row by row: only the bad row fails', async (t) => {
  const bad = turn(1);
  const { turns, statements } = store((rows) => rows.some((r) => r.id === bad.id));
  const good = turn(1);
  const results = await Promise.allSettled([turns.insert('sess_gone', bad), turns.insert('sess_ok', good)]);
  t.same(
    results.map((r) => r.status),
    ['rejected', 'fulfilled'],
  );
  t.equal((results[0] as PromiseRejectedResult).reason.code, '23503');
  t.same(
    statements.map((s) => s.rows.length),
    [2, 1, 1],
    'the batch, then each row',
  );
});

t.test('runs that end together release their sessions in one statement', async (t) => {
  const statements: { q: string; rows: { id: string; owner: string; status: string; last_seq: number | null }[] }[] = [];
  const db = {
    sql: async (q: string, p: unknown[] = []) => {
      statements.push({ q: q.trim().split(/\s+/).slice(0, 2).join(' '), rows: JSON.parse(String(p[0])) });
      return [];
    },
  };
  const runs = new RunStore(db as never);
  await Promise.all([runs.release('sess_a', 'inst_1', 'completed', 12), runs.release('sess_b', 'inst_1', 'failed', null)]);
  t.same(statements, [
    {
      q: 'update sessions',
      rows: [
        { id: 'sess_a', owner: 'inst_1', status: 'completed', last_seq: 12 },
        { id: 'sess_b', owner: 'inst_1', status: 'failed', last_seq: null },
      ],
    },
  ]);
});
