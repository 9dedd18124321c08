import t from 'tap';
import { Hooks } from '../../src/core/engine/hooks.js';
import type { RunInfo } from '../../src/core/engine/run-info.js';
import { RunLimits, type LimitKind, type RoleLimits } from '../../src/features/run-limits/limits.js';

// The wall clock on a fake clock: exact seconds, the pause left out, nothing kept after a run ends.

function setup(maxSeconds: number, roleLimits: RoleLimits | null = null) {
  let now = 0;
  const counted: LimitKind[] = [];
  const logged: unknown[] = [];
  const logger = { warn: (o: unknown) => void logged.push(o) } as never;
  const limits = new RunLimits(
    { maxSeconds, maxToolCalls: 500, loopRepeats: 5 },
    logger,
    (l) => void counted.push(l),
    () => now,
    roleLimits,
  );
  const hooks = new Hooks(logger);
  for (const c of limits.hooks()) hooks.add(c);
  hooks.seal();
  const told: unknown[] = [];
  const run = (runId: string, origin: RunInfo['origin'], sessionId = 's1'): RunInfo => ({
    runId,
    userId: 'u1',
    sessionId,
    model: 'm',
    origin,
    unattended: false,
    signal: new AbortController().signal,
    notice: (code, message, data) => void told.push({ code, message, ...data }),
  });
  return { hooks, limits, told, counted, logged, run, advance: (s: number) => void (now += s * 1000) };
}

t.test('the wait for an answer is left out; active time before and after it adds up', async (t) => {
  const { hooks, limits, told, counted, logged, run, advance } = setup(10);
  const first = run('run_1', 'chat');
  await hooks.emit('run.started', { run: first });
  advance(6);
  t.equal(await hooks.ask('model.before', { run: first, loopId: 'root', model: 'm' }), undefined);
  await hooks.emit('run.ended', { run: first, status: 'completed', finish_reason: 'tool_question', error: null });
  advance(3600); // an hour waiting for the answer
  const answer = run('run_2', 'answer');
  await hooks.emit('run.started', { run: answer });
  advance(3);
  t.equal(await hooks.ask('model.before', { run: answer, loopId: 'root', model: 'm' }), undefined, '9 s of 10 active');
  advance(2);
  t.same(await hooks.ask('model.before', { run: answer, loopId: 'root', model: 'm' }), {
    action: 'stop',
    code: 'RUN_LIMIT',
    message: 'The run was ended: it ran 11 s, past its 10 s (AGENTSVC_RUN_MAX_SECONDS).',
    finish_reason: 'limit',
  });
  t.same(told, [
    { code: 'RUN_LIMIT', message: 'The run was ended: it ran 11 s, past its 10 s (AGENTSVC_RUN_MAX_SECONDS).', session_id: 's1', limit: 'seconds', max: 10, value: 11 },
  ]);
  // A sub-agent's model call and then the root's stop too, told once.
  t.match(await hooks.ask('model.before', { run: answer, loopId: 'root', model: 'm' }), { action: 'stop', finish_reason: 'limit' });
  t.equal(told.length, 1);
  t.same(counted, ['seconds']);
  t.match(logged, [{ session_id: 's1', run_id: 'run_2', limit: 'seconds', max: 10, value: 11 }]);
  await hooks.emit('run.ended', { run: answer, status: 'completed', finish_reason: 'limit', error: null });
  t.equal(limits.size, 0, 'nothing kept after the run');
});

t.test('a new message after a paused run starts a fresh clock', async (t) => {
  const { hooks, limits, run, advance } = setup(10);
  const first = run('run_1', 'chat');
  await hooks.emit('run.started', { run: first });
  advance(9);
  await hooks.emit('run.ended', { run: first, status: 'completed', finish_reason: 'tool_approval', error: null });
  t.equal(limits.size, 1, 'kept while it waits');
  const fresh = run('run_2', 'chat');
  await hooks.emit('run.started', { run: fresh });
  advance(5);
  t.equal(await hooks.ask('model.before', { run: fresh, loopId: 'root', model: 'm' }), undefined);
  await hooks.emit('session.deleted', { userId: 'u1', sessionId: 's1' });
  t.equal(limits.size, 0);
});

t.test("a session role's max_seconds replaces the install's for its runs only", async (t) => {
  // s1 has a role with a 5 s wall clock; s2 has none (the install's 3600 s).
  const { hooks, told, run, advance } = setup(3600, async (sessionId) => (sessionId === 's1' ? { max_seconds: 5 } : null));
  const strict = run('run_1', 'chat', 's1');
  const open = run('run_2', 'chat', 's2');
  await hooks.emit('run.started', { run: strict });
  await hooks.emit('run.started', { run: open });
  advance(4);
  t.equal(await hooks.ask('model.before', { run: strict, loopId: 'root', model: 'm' }), undefined, '4 s of 5');
  advance(2);
  t.same(await hooks.ask('model.before', { run: strict, loopId: 'root', model: 'm' }), {
    action: 'stop',
    code: 'RUN_LIMIT',
    message: "The run was ended: it ran 6 s, past its 5 s (the role's run_limits.max_seconds).",
    finish_reason: 'limit',
  });
  t.equal(await hooks.ask('model.before', { run: open, loopId: 'root', model: 'm' }), undefined, 'the same 6 s under the install ceiling go on');
  t.same(told, [{ code: 'RUN_LIMIT', message: "The run was ended: it ran 6 s, past its 5 s (the role's run_limits.max_seconds).", session_id: 's1', limit: 'seconds', max: 5, value: 6 }]);
});

t.test("a failed read of the role's ceilings keeps the install's", async (t) => {
  const { hooks, logged, run, advance } = setup(10, async () => {
    throw new Error('db down');
  });
  const r = run('run_1', 'chat');
  await hooks.emit('run.started', { run: r });
  advance(11);
  t.match(await hooks.ask('model.before', { run: r, loopId: 'root', model: 'm' }), { action: 'stop', message: /past its 10 s \(AGENTSVC_RUN_MAX_SECONDS\)/ });
  t.match(logged[0], { session_id: 's1', err: { message: 'db down' } });
});
