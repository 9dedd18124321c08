import t from 'tap';
import { HookOrderError, Hooks } from '../../src/core/engine/hooks.js';
import { orderHooks } from '../../src/core/engine/hook-order.js';

/** The run-hook catalogue (src/core/engine/hooks.ts): order by declaration, not by list position. */
const errors: unknown[] = [];
const logger = { error: (o: unknown) => errors.push(o), warn() {}, info() {}, debug() {} } as never;
const names = (xs: { name: string }[]) => xs.map((x) => x.name);

t.test('before/after decide the order; free ones go by name, whatever order they came in', async (t) => {
  t.same(names(orderHooks('p', [{ name: 'c' }, { name: 'a' }, { name: 'b' }])), ['a', 'b', 'c']);
  t.same(names(orderHooks('p', [{ name: 'recall', after: ['checkpoint'] }, { name: 'x' }, { name: 'checkpoint' }])), ['checkpoint', 'recall', 'x']);
  t.same(names(orderHooks('p', [{ name: 'a', after: ['z'] }, { name: 'z' }, { name: 'm' }])), ['m', 'z', 'a'], 'a waits for z; m is free first');
  t.same(names(orderHooks('p', [{ name: 'recall' }, { name: 'checkpoint', before: ['recall'] }])), ['checkpoint', 'recall']);
  t.same(names(orderHooks('p', [{ name: 'c', after: ['b'] }, { name: 'b', after: ['a'] }, { name: 'a' }])), ['a', 'b', 'c']);
});

t.test('a cycle, an unknown name and a name twice are errors naming the point and the contributions', async (t) => {
  t.throws(() => orderHooks('run.opening', [{ name: 'a', after: ['b'] }, { name: 'b', after: ['a'] }]), new HookOrderError('hook run.opening: contributions ordered in a cycle: a -> b -> a'));
  t.throws(
    () => orderHooks('run.opening', [{ name: 'memories.recall', after: ['timetravel.chekpoint'] }]),
    new HookOrderError('hook run.opening: memories.recall is ordered against timetravel.chekpoint, which contributes nothing to run.opening'),
  );
  t.throws(() => orderHooks('model.prepare', [{ name: 'a' }, { name: 'a' }]), new HookOrderError('hook model.prepare: two contributions are named a'));
});

t.test('the service start stops at seal() on an unknown name or a cycle; a point not in the catalogue fails at once', async (t) => {
  const h = new Hooks(logger);
  h.add({ on: 'run.opening', name: 'memories.recall', after: ['timetravel.checkpoint'], run: () => {} });
  await h.call('run.opening', {} as never);
  t.throws(() => h.seal(), new HookOrderError('hook run.opening: memories.recall is ordered against timetravel.checkpoint, which contributes nothing to run.opening'));
  const c = new Hooks(logger);
  c.step('model.prepare', () => null, { name: 'a', before: ['b'] });
  c.step('model.prepare', () => null, { name: 'b', before: ['a'] });
  t.throws(() => c.seal(), /hook model\.prepare: contributions ordered in a cycle: (a -> b -> a|b -> a -> b)/);
  t.throws(() => c.add({ on: 'run.opned', name: 'x', run: () => {} } as never), new HookOrderError('hook run.opned: no such point in the catalogue (src/core/engine/hook-catalogue.ts)'));
  const s = new Hooks(logger);
  s.seal();
  t.throws(() => s.step('model.prepare', () => null, { name: 'late', after: ['nobody'] }), /late is ordered against nobody/, 'sealed: a contribution that breaks the order is refused as it is added');
  t.equal(s.has('model.prepare'), false, 'and not kept');
});

t.test('steps run in declared order until one answers', async (t) => {
  const h = new Hooks(logger);
  const seen: string[] = [];
  h.add({ on: 'session.access', name: 'second', after: ['first'], run: () => seen.push('second') > 0 });
  h.add({ on: 'session.access', name: 'first', run: () => void seen.push('first') });
  h.seal();
  t.equal(await h.call('session.access', { userId: 'u', workspaceId: 'w' }), true);
  t.same(seen, ['first', 'second']);
  t.equal(await h.call('whatif.fork', {} as never), undefined, 'no contribution: no answer');
});

t.test('fields merge in order and survive a failing contribution; wraps nest in order', async (t) => {
  const h = new Hooks(logger);
  h.field('run.ending', () => ({ usage: { input_tokens: 1, output_tokens: 2, cost: null } }), { name: 'usage' });
  h.field(
    'run.ending',
    () => {
      throw new Error('broken');
    },
    { name: 'broken', before: ['usage'] },
  );
  errors.length = 0;
  t.same(h.fields('run.ending', {} as never), { usage: { input_tokens: 1, output_tokens: 2, cost: null } });
  t.equal(errors.length, 1, 'the failure is logged');
  const w = new Hooks(logger);
  const tag = (s: string) => (bus: unknown) => ({ tag: `${s}(${(bus as { tag: string }).tag})` }) as never;
  w.wrapper('events.bus', tag('metrics'), { name: 'metrics' });
  w.wrapper('events.bus', tag('traces'), { name: 'traces', before: ['metrics'] });
  t.same(w.wrap('events.bus', { tag: 'bus' } as never), { tag: 'metrics(traces(bus))' }, 'the first in order wraps the port itself');
});

t.test('the catalogue lists every point with its contributors in order', async (t) => {
  const h = new Hooks(logger);
  h.add({ on: 'run.opening', name: 'memories.recall', run: () => {} });
  h.add({ on: 'run.opening', name: 'timetravel.checkpoint', before: ['memories.recall'], run: () => {} });
  h.seal();
  const row = h.catalogue().find((r) => r.point === 'run.opening');
  t.same(row, { point: 'run.opening', kind: 'step', contributors: ['timetravel.checkpoint', 'memories.recall'] });
});
