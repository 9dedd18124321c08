import t from 'tap';
import { DatabaseJobs } from '../../src/platform/infra/jobs-db.js';
import { buildWithModel } from '../helpers/chat.js';
import { testDatabase } from '../helpers/db.js';
import { quietFor, waitFor } from '../helpers/wait.js';
import type { TestApp } from '../helpers/app.js';
import { minuteSoon, onCalendarMinute } from './clock.js';

/**
 * Scheduled tasks firing on the database-backed scheduler: an occurrence is a chat like any other,
 * runs once in the whole install, answers questions itself with skip_confirmations.
 */

const quiet = { error() {}, warn() {}, info() {} };

async function waitRun(app: TestApp, taskId: string, ms: number, done = (r: any) => r.status !== 'running'): Promise<any[]> {
  const runs = async (): Promise<any[]> => (await app.api(`/api/scheduled-tasks/${taskId}/runs`)).json();
  return waitFor(
    async () => {
      const got = await runs();
      return got.length > 0 && done(got[0]) && got;
    },
    { timeoutMs: ms, everyMs: 100, what: `a run of ${taskId} in the awaited state` },
  ).catch(async (e) => {
    throw new Error(`${e.message}: ${JSON.stringify(await runs())}`);
  });
}

/** Make the task's next occurrence due now (instead of waiting for the clock). */
async function dueNow(app: TestApp, taskId: string) {
  await app.service.db.em().getConnection().execute(`update job_schedules set next_at = date_trunc('second', now()) where id = ?`, [taskId]);
}

t.test('an occurrence at its cron time is a new session of the owner, streamed and stored like any chat', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_SCHEDULER_POLL_MS: '250' });
  model.fallback = { text: ['Report ', 'done.'] };
  // The calendar's next minute a few seconds away, not up to a minute (test/scheduling/clock.ts).
  const soon = minuteSoon(app);
  const created = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Every minute', prompt: 'Write the report', cron: '* * * * *', timezone: 'UTC' } })).json();
  const nextAt = Date.parse(created.next_run_at);
  t.ok(onCalendarMinute(app, created.next_run_at), `next_run_at ${created.next_run_at} is a whole minute of the calendar`);
  t.comment(`waiting for ${created.next_run_at} (${Math.round((nextAt - Date.now()) / 1000)} s; ${nextAt === soon ? 'the minute aimed at' : 'a minute later: the request was slow'})`);
  const [run] = await waitRun(app, created.id, 75_000);
  t.match(run, { task_id: created.id, status: 'completed', error: null });
  t.match(run.id, /^trun_/);
  const lateMs = Date.parse(run.triggered_at) - nextAt;
  t.comment(`fired ${lateMs} ms after its time`);
  t.ok(lateMs >= 0 && lateMs < 10_000, `at its time, within 10 s (the scheduler polls every 250 ms): ${lateMs} ms`);
  t.ok(Date.parse(run.finished_at) >= Date.parse(run.triggered_at), 'finished after it was triggered');

  const session = await (await app.api(`/api/sessions/${run.session_id}`)).json();
  t.equal(session.intent, 'Every minute', 'intent = title');
  t.equal(session.status, 'completed');
  const listed = await (await app.api('/api/sessions')).json();
  t.ok(listed.items.some((s: any) => s.session_id === run.session_id || s.id === run.session_id), 'visible in the session list');
  const messages = await (await app.api(`/api/sessions/${run.session_id}/messages`)).json();
  const text = JSON.stringify(messages);
  t.match(text, 'Write the report', 'the prompt is the user message');
  t.match(text, 'Report done.', "the agent's answer is stored");
  t.match(model.requests[0].messages.at(-1), { role: 'user', content: 'Write the report' }, 'the model got the prompt');

  const task = await (await app.api(`/api/scheduled-tasks/${created.id}`)).json();
  t.same(task.last_run, run, 'last_run is the run record');
  t.ok(Date.parse(task.next_run_at) > Date.parse(created.next_run_at), 'next_run_at moved on');
});

t.test('the same occurrence fired twice, and two schedulers on one database: one run', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = { text: ['ok'] };
  const task = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Once', prompt: 'go', cron: '0 0 1 1 *', timezone: 'UTC' } })).json();
  const at = new Date('2026-11-23T10:00:00Z');
  const { launcher } = app.service.scheduled;
  await Promise.all([launcher.fire(task.id, at), launcher.fire(task.id, at), launcher.fire(task.id, new Date(at))]);
  const runs = await waitRun(app, task.id, 20_000);
  t.equal(runs.length, 1, 'three fires of one occurrence, one run');
  t.equal(model.requests.length, 1, 'one chat');

  // Two database schedulers (as two nodes) polling one due schedule: one hand-over.
  const db = await testDatabase(t);
  const got: string[] = [];
  const nodes = [new DatabaseJobs(db, quiet, 50), new DatabaseJobs(db, quiet, 50)];
  t.teardown(() => Promise.all(nodes.map((n) => n.close())));
  await nodes[0].upsert({ id: 'job-a', cron: '* * * * *', tz: 'UTC' });
  await db.em().getConnection().execute(`update job_schedules set next_at = now() - interval '1 second' where id = 'job-a'`);
  for (const [i, n] of nodes.entries()) await n.start(async (id, when) => void got.push(`${i}:${id}:${when.toISOString()}`));
  await Promise.all([...Array(10)].map((_, i) => nodes[i % 2].poll()));
  await waitFor(() => got.length > 0, { what: 'the due job handed to a node' });
  await quietFor(300, 'a second hand-out of the same occurrence');
  t.equal(got.length, 1, `handed to one node once (${got.join(', ')})`);
  const [row] = await db.em().getConnection().execute(`select next_at from job_schedules where id = 'job-a'`);
  t.ok(new Date(row.next_at).getTime() > Date.now(), 'advanced to the next minute');
});

t.test('skip_confirmations answers questions with the first option; without it the run waits for its user', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_SCHEDULER_POLL_MS: '200' });
  const ask = { questions: [{ question: 'Which format?', options: [{ label: 'PDF' }, { label: 'HTML' }] }] };
  model.fallback = (body: any) => {
    const last = body.messages.at(-1);
    if (last.role === 'tool') return { text: [`chose: ${last.content}`] };
    return { toolCalls: [{ name: 'AskUserQuestion', args: ask }] };
  };
  const skip = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Skips', prompt: 'report', cron: '0 0 1 1 *', timezone: 'UTC', skip_confirmations: true } })).json();
  await dueNow(app, skip.id);
  const [run] = await waitRun(app, skip.id, 20_000);
  t.match(run, { status: 'completed', error: null });
  const messages = JSON.stringify(await (await app.api(`/api/sessions/${run.session_id}/messages`)).json());
  t.match(messages, 'PDF', 'answered with the first option');
  t.match(messages, 'chose:', 'and the run went on');

  const asks = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Asks', prompt: 'report', cron: '0 0 1 1 *', timezone: 'UTC' } })).json();
  await dueNow(app, asks.id);
  const [open] = await waitRun(app, asks.id, 20_000, (r) => !!r.session_id);
  const status = async () => (await (await app.api(`/api/sessions/${open.session_id}`)).json()).status;
  await waitFor(async () => !['created', 'running'].includes(await status()), { timeoutMs: 20_000, what: 'the run to reach the question' });
  t.equal(await status(), 'waiting_for_input', 'the question waits for the user');
  t.match((await (await app.api(`/api/scheduled-tasks/${asks.id}/runs`)).json())[0], { status: 'running' });
});

t.test('a run that fails is recorded failed with the reason; an expired task is disabled', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_SCHEDULER_POLL_MS: '200' });
  model.fallback = { status: 400 };
  const task = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Fails', prompt: 'x', cron: '0 0 1 1 *', timezone: 'UTC' } })).json();
  await dueNow(app, task.id);
  const [run] = await waitRun(app, task.id, 20_000);
  t.equal(run.status, 'failed');
  t.ok(run.error && run.error.length > 0, `error: ${run.error}`);

  const soon = new Date(Date.now() + 1500).toISOString();
  const exp = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Expires', prompt: 'x', cron: '0 0 1 1 *', timezone: 'UTC', expires_at: soon } })).json();
  t.equal(exp.enabled, true);
  await waitFor(() => Date.now() > Date.parse(soon), { timeoutMs: 5000, everyMs: 50, what: 'the expiry time to pass' });
  await app.service.scheduled.scheduling.expire();

  const after = await (await app.api(`/api/scheduled-tasks/${exp.id}`)).json();
  t.match(after, { enabled: false, next_run_at: null }, 'disabled once expired');
  const again = await app.api(`/api/scheduled-tasks/${exp.id}/start`, { method: 'POST' });
  t.equal(again.status, 422, 'starting an expired task asks for a new expires_at');
  const moved = await app.api(`/api/scheduled-tasks/${exp.id}`, { method: 'PATCH', json: { expires_at: null, enabled: true } });
  t.match(await moved.json(), { enabled: true, expires_at: null });
});
