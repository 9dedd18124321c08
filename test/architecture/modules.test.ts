import t from 'tap';
import { type Module, ModuleGraphError, orderModules, startModules } from '../../src/platform/lib/modules.js';
import { Shutdown } from '../../src/platform/lib/shutdown.js';

/** The module orderer and starter (src/platform/lib/modules.ts) with toy modules that record what happens. */
function toy(name: string, needs: string[], log: string[], opts: { fail?: boolean; provides?: unknown } = {}): Module {
  return {
    name,
    needs: needs as never,
    start: async (ctx) => {
      for (const n of needs) log.push(`${name} got ${String(ctx.get(n as never))}`);
      if (opts.fail) throw new Error(`${name} broke`);
      log.push(`start ${name}`);
      return {
        provides: (opts.provides ?? name) as never,
        close: [
          { phase: 'infrastructure', name: `${name}`, close: async () => log.push(`close ${name}`) },
          { phase: 'intake', name: `${name} intake`, close: async () => log.push(`intake ${name}`) },
        ],
      };
    },
  };
}

const names = (ms: { name: string }[]) => ms.map((m) => m.name);

t.test('modules start after what they need; ready ones keep the listed order', async (t) => {
  const order = orderModules([
    { name: 'chat', needs: ['sessions', 'events'] },
    { name: 'users', needs: [] },
    { name: 'sessions', needs: ['users'] },
    { name: 'events', needs: [] },
  ]);
  t.same(names(order), ['users', 'sessions', 'events', 'chat']);
});

t.test('an unknown need is an error naming the module and the need', async (t) => {
  t.throws(() => orderModules([{ name: 'chat', needs: ['sessoins'] }]), new ModuleGraphError('module chat needs sessoins, which no module provides'));
});

t.test('a cycle is an error naming the modules in it', async (t) => {
  const err = (() => {
    try {
      orderModules([
        { name: 'users', needs: [] },
        { name: 'a', needs: ['users', 'c'] },
        { name: 'b', needs: ['a'] },
        { name: 'c', needs: ['b'] },
      ]);
    } catch (e) {
      return e as Error;
    }
  })();
  t.type(err, ModuleGraphError);
  t.equal(err?.message, 'modules in a dependency cycle: a -> c -> b -> a');
});

t.test('two modules of one name are refused', async (t) => {
  t.throws(() => orderModules([{ name: 'a', needs: [] }, { name: 'a', needs: [] }]), /two modules are named a/);
});

t.test('a module gets what it needs; closing goes by phase, dependents first within one', async (t) => {
  const log: string[] = [];
  const shutdown = new Shutdown(() => {});
  const started = await startModules([toy('b', ['a'], log), toy('a', [], log), toy('c', ['a', 'b'], log)], {} as never, shutdown);
  t.same(started.order, ['a', 'b', 'c']);
  t.equal(started.get('b' as never), 'b');
  t.same(log, ['start a', 'b got a', 'start b', 'c got a', 'c got b', 'start c']);
  log.length = 0;
  await shutdown.run();
  t.same(log, ['intake c', 'intake b', 'intake a', 'close c', 'close b', 'close a']);
});

t.test('asking for a module not in needs throws', async (t) => {
  const shutdown = new Shutdown(() => {});
  const sneaky: Module = { name: 'sneaky', needs: [], start: (ctx) => ({ provides: ctx.get('a' as never) }) as never };
  await t.rejects(startModules([toy('a', [], []), sneaky], {} as never, shutdown), /module sneaky asked for a without declaring it in needs/);
});

t.test('a failing start closes what already started, in reverse, and throws its error', async (t) => {
  const log: string[] = [];
  const shutdown = new Shutdown(() => {});
  const seen: string[] = [];
  await t.rejects(
    startModules([toy('a', [], log), toy('b', ['a'], log), toy('c', ['b'], log, { fail: true }), toy('d', ['c'], log)], {} as never, shutdown, (m) => void seen.push(m.name)),
    new Error('c broke'),
  );
  t.same(seen, ['a', 'b'], 'contributions told as each started');
  t.same(log, ['start a', 'b got a', 'start b', 'c got b', 'intake b', 'intake a', 'close b', 'close a']);
});

t.test('a module may start before modules that do not need it (a wrap of their port); an unknown name is an error', async (t) => {
  const order = orderModules([
    { name: 'events', needs: [] },
    { name: 'users', needs: [] },
    { name: 'telemetry', needs: ['users'], before: ['events'] },
  ]);
  t.same(names(order), ['users', 'telemetry', 'events']);
  t.throws(() => orderModules([{ name: 'telemetry', needs: [], before: ['evnets'] }]), new ModuleGraphError('module telemetry starts before evnets, which no module is named'));
  t.throws(
    () =>
      orderModules([
        { name: 'events', needs: ['telemetry'] },
        { name: 'telemetry', needs: [], before: ['events'] },
        { name: 'runner', needs: ['events'], before: ['telemetry'] },
      ]),
    new ModuleGraphError('modules in a dependency cycle: events -> telemetry -> runner -> events'),
  );
});
