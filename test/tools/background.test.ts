import t from 'tap';
import type { Computer, ExecOptions, ExecResult } from '../../runners/types.js';
import { BackgroundTasks } from '../../src/core/tools/background.js';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/** A computer whose commands write `chunks` (then wait for abort, when `hang`). */
function fakeComputer(chunks: () => Iterable<string>, hang = true): Computer {
  const result = (aborted: boolean): ExecResult => ({
    exitCode: aborted ? null : 0,
    signal: aborted ? 'SIGKILL' : null,
    stdout: '',
    stderr: '',
    timedOut: false,
    aborted,
    truncated: false,
    durationMs: 1,
  });
  return {
    userId: 'u',
    root: '/w',
    async exec(_cmd: string, o: ExecOptions = {}) {
      for (const c of chunks()) {
        if (o.signal?.aborted) break;
        o.onOutput?.('stdout', c);
        await new Promise((r) => setImmediate(r));
      }
      if (!hang || o.signal?.aborted) return result(!!o.signal?.aborted);
      await new Promise((r) => o.signal?.addEventListener('abort', r, { once: true }));
      return result(true);
    },
  };
}

const opts = (userId = 'alice') => ({ userId, cwd: '/w' });

async function finished(bg: BackgroundTasks, sid: string, id: string) {
  await waitFor(() => bg.get(sid, id)!.status !== 'running', { timeoutMs: 5000, what: `background task ${id} to finish` });
  return bg.get(sid, id, 2)!;
}

t.test('output without newlines is kept to the last N characters; totals still counted', async (t) => {
  const bg = new BackgroundTasks({ outputBytes: 64 * 1024 });
  const chunk = 'x'.repeat(64 * 1024);
  // 24 MiB without a newline: the old buffer kept it all as one growing "partial line".
  const task = bg.start(
    's1',
    fakeComputer(() => Array.from({ length: 384 }, () => chunk), false),
    'cat /dev/zero',
    opts(),
  );
  const got = await finished(bg, 's1', task.id);
  t.ok(got.output.length <= 64 * 1024, `kept ${got.output.length} characters`);
  t.equal(got.output_bytes, 384 * 64 * 1024, 'every byte counted');
  t.equal(got.dropped_bytes, 384 * 64 * 1024 - 64 * 1024);
  t.equal(got.total_lines, 1);
});

t.test('tail lines come from the kept window, line counts from everything', async (t) => {
  const bg = new BackgroundTasks({ outputBytes: 1024 });
  const lines = Array.from({ length: 5000 }, (_, i) => `line${i}\n`);
  const task = bg.start(
    's1',
    fakeComputer(() => lines, false),
    'seq',
    opts(),
  );
  const got = await finished(bg, 's1', task.id);
  t.equal(got.output, 'line4998\nline4999');
  t.equal(got.total_lines, 5000);
  t.equal(got.status, 'completed');
});

t.test('running tasks are capped per user, with an error the model can act on', async (t) => {
  const bg = new BackgroundTasks({ maxTasks: 2 });
  t.teardown(() => bg.close());
  const c = fakeComputer(() => []);
  const a = bg.start('s1', c, 'sleep 1000', opts());
  bg.start('s2', c, 'sleep 1000', opts());
  t.throws(() => bg.start('s1', c, 'sleep 1000', opts()), { isToolError: true, message: /limit 2 per user.*Stop one/ });
  t.equal(bg.start('s3', c, 'sleep 1000', opts('bob')).status, 'running', 'another user is not affected');
  await bg.stop('s1', a.id);
  t.equal(bg.start('s1', c, 'sleep 1000', opts()).status, 'running', 'a stopped task frees its slot');
});

t.test('a task past its lifetime is killed and says why', async (t) => {
  const bg = new BackgroundTasks({ maxLifetimeMs: 150 });
  const task = bg.start(
    's1',
    fakeComputer(() => ['serving\n']),
    'serve forever',
    opts(),
  );
  await waitFor(() => task.status !== 'running', { timeoutMs: 2000, everyMs: 20, what: 'the task stopped at its lifetime' });
  t.equal(task.status, 'killed');
  t.match(bg.get('s1', task.id)!.output, /serving\n+\[background task stopped: it ran longer than the 150 ms limit\]/);
});

t.test('finished tasks are forgotten beyond twice the per-user limit, oldest first', async (t) => {
  const bg = new BackgroundTasks({ maxTasks: 2 });
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const task = bg.start(
      's1',
      fakeComputer(() => [`${i}\n`], false),
      `echo ${i}`,
      opts(),
    );
    await bg.stop('s1', task.id);
    ids.push(task.id);
  }
  t.same(
    bg.list('s1').map((x) => x.id),
    ids.slice(-4),
  );
});

/** The app, with one session whose model has started `command` as a background task. */
async function startedInBackground(t: Parameters<typeof buildWithModel>[0], command: string, env: Record<string, string> = {}) {
  const { app, model } = await buildWithModel(t, env);
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script({ toolCalls: [{ name: 'Bash', args: { command, run_in_background: true } }] }, { text: ['started'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'start it' });
  await untilEnd(seen, sid);
  const [task] = app.service.background.list(sid);
  return { app, sid, task };
}

t.test('deleting a session stops its background tasks', async (t) => {
  const { app, sid, task } = await startedInBackground(t, 'echo up; sleep 60');
  t.equal(task.status, 'running');
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.equal(task.status, 'killed', 'stopped by the delete');
  t.same(app.service.background.list(sid), [], 'and forgotten');
});

t.test('a real command flooding output without newlines keeps only the tail', async (t) => {
  const {
    app,
    sid,
    task: { id },
  } = await startedInBackground(t, 'head -c 40000000 /dev/zero | tr "\\0" x', { AGENTSVC_BACKGROUND_OUTPUT_BYTES: '65536' });
  const task: any = await waitFor(
    async () => {
      const got = await (await app.api(`/api/sessions/${sid}/background-tasks/${id}?tail=5`)).json();
      return got.status !== 'running' && got;
    },
    { timeoutMs: 30_000, everyMs: 100, what: 'the background task to end' },
  );

  t.equal(task.status, 'completed');
  t.equal(task.output_bytes, 40_000_000);
  t.ok(task.output.length <= 65536, `kept ${task.output.length} characters`);
});
