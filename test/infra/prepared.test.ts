// Named prepared statements (src/platform/db/prepared.ts) on a real PostgreSQL: a text is named at its 3rd
// run; a result type changed by ALTER TABLE and a server that lost the statement (a pooler in
// transaction mode) are answered by running it again, unnamed.
import t from 'tap';
import { loadConfig } from '../../src/platform/config/index.js';
import { openDatabase } from '../../src/platform/db/index.js';
import { PositionalTexts, StatementNames } from '../../src/platform/db/prepared.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { tmpdir } from 'node:os';

t.test('naming: at the 3rd run, at most 200 texts, bounded counting', async (t) => {
  const n = new StatementNames();
  t.equal(n.name('select 1'), undefined);
  t.equal(n.name('select 1'), undefined);
  const name = n.name('select 1');
  t.match(name, /^agentsvc_[0-9a-f]{20}$/);
  t.equal(n.name('select 1'), name, 'the same name from then on');
  for (let i = 0; i < 500; i++) for (let k = 0; k < 3; k++) n.name(`select ${i} + 0`);
  const named = Array.from({ length: 500 }, (_, i) => n.name(`select ${i} + 0`)).filter(Boolean);
  t.equal(named.length, 199, 'at most 200 texts are named (select 1 and 199 others)');
  t.notOk(n.refused('select 1', Object.assign(new Error('syntax error'), { code: '42601' })), 'other errors are errors');
  t.equal(n.name('select 1'), name);
});

t.test('a real server', async (t) => {
  // One connection, so pg_prepared_statements shows every statement the pool prepared.
  const db = await openDatabase(loadConfig({ env: { DATABASE_URL: await freshDatabaseUrl(t), AGENTSVC_HOME: tmpdir() } }), { poolMax: 1 });
  t.teardown(() => db.close());
  const prepared = async () => (await db.sql<{ statement: string }>('select statement from pg_prepared_statements')).map((r) => r.statement);
  await db.sql('create table p (id int primary key, a text)');
  const q = 'select * from p where id = ?';
  for (let i = 0; i < 2; i++) await db.sql('insert into p (id, a) values (?, ?)', [i, `v${i}`]);
  t.same(await db.sql(q, [0]), [{ id: 0, a: 'v0' }]);
  t.same(await db.sql(q, [1]), [{ id: 1, a: 'v1' }]);
  t.notOk((await prepared()).includes('select * from p where id = $1'), 'not named at its 2nd run');
  t.same(await db.sql(q, [1]), [{ id: 1, a: 'v1' }]);
  t.ok((await prepared()).includes('select * from p where id = $1'), 'named at its 3rd run');

  // A migration adds a column: the named plan's result type changed; the answer has the column.
  await db.sql('alter table p add column b int default 7');
  t.same(await db.sql(q, [1]), [{ id: 1, a: 'v1', b: 7 }], 'a changed result type runs again, unnamed');
  t.same(await db.sql(q, [0]), [{ id: 0, a: 'v0', b: 7 }], 'and stays unnamed');

  // The server forgets every statement (what a pooler in transaction mode does when it hands the
  // next statement to another backend): the statement runs once, unnamed, and naming stops.
  const ins = 'insert into p (id, a) values (?, ?) returning id';
  for (let i = 10; i < 13; i++) await db.sql(ins, [i, 'x']);
  t.ok((await prepared()).includes('insert into p (id, a) values ($1, $2) returning id'));
  await db.sql('deallocate all');
  t.same(await db.sql(ins, [13, 'x']), [{ id: 13 }], 'a lost statement runs again, unnamed');
  t.same(await db.sql<{ n: number }>('select count(*)::int as n from p where id = 13'), [{ n: 1 }], 'and once');
  for (let i = 0; i < 4; i++) await db.sql('select count(*) from p where a = ?', ['x']);
  t.same(await prepared(), [], 'nothing is named any more');
});

t.test('texts without parameters stay unnamed: they may hold several statements', async (t) => {
  const db = await openDatabase(loadConfig({ env: { DATABASE_URL: await freshDatabaseUrl(t), AGENTSVC_HOME: tmpdir() } }), { poolMax: 1 });
  t.teardown(() => db.close());
  for (let i = 0; i < 4; i++) await db.sql('create temp table if not exists q (a int); insert into q values (1)');
  t.same(await db.sql('select count(*)::int as n from q'), [{ n: 4 }]);
});

t.test('positional texts: $n once per text; knex forms and a wrong count are left to knex', async (t) => {
  const p = new PositionalTexts();
  t.equal(p.positional('select ? + ?::int where a = ?', 3), 'select $1 + $2::int where a = $3');
  t.equal(p.positional('select ? + ?::int where a = ?', 2), null, 'a count that differs: knex throws its error');
  t.equal(p.positional('select ?? from t where a = ?', 2), null, 'an identifier binding');
  t.equal(p.positional('select \\? where a = ?', 1), null, 'an escaped ?');
});

t.test('the direct path answers as knex did: rows, literal ? without values, knex forms, its errors', async (t) => {
  const db = await openDatabase(loadConfig({ env: { DATABASE_URL: await freshDatabaseUrl(t), AGENTSVC_HOME: tmpdir() } }), { poolMax: 2 });
  t.teardown(() => db.close());
  t.same(await db.sql('select ?::int + ?::int as n, ?::text as s', [1, 2, 'x']), [{ n: 3, s: 'x' }]);
  t.same(await db.sql(`select '{"a":1}'::jsonb ? 'a' as has`), [{ has: true }], 'a ? in a text without values is the operator');
  t.same(await db.sql('select ?? from (select 5 as n) x', ['n']), [{ n: 5 }], 'an identifier binding, through knex');
  await t.rejects(db.sql('select ?::int', [1, 2]), /Expected 2 bindings, saw 1/, "a wrong count: knex's error");
  await t.rejects(db.sql('select * from no_such_table where a = ?', [1]), { code: '42P01' }, "the server's error, its code kept");
  const both = await Promise.all(Array.from({ length: 5 }, (_, i) => db.sql<{ i: number }>('select ?::int as i, pg_sleep(0.01)', [i])));
  t.same(
    both.map((r) => r[0].i),
    [0, 1, 2, 3, 4],
    'more statements than connections at once: each waits for one',
  );
});
