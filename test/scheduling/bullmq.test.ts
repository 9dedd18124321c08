import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';
import { needs } from '../helpers/needs.js';
import { minuteSoon, onCalendarMinute } from './clock.js';

/** With REDIS_URL the occurrences come from BullMQ job schedulers: same behaviour as the database scheduler. */

const url = process.env.TEST_REDIS_URL;
if (!url) {
  needs(t, 'the BullMQ scheduler test', 'TEST_REDIS_URL is not set (npm test starts redis-server when it is installed)');
} else {
  t.test('BullMQ: a task fires at its cron time, once, as a chat', async (t) => {
    const { app, model } = await buildWithModel(t, { REDIS_URL: url });
    t.equal(app.service.scheduled.jobs.kind, 'bullmq');
    model.fallback = { text: ['from bullmq'] };
    // The calendar's next minute a few seconds away, not up to a minute (test/scheduling/clock.ts).
    const soon = minuteSoon(app);
    const task = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Bull', prompt: 'tick', cron: '* * * * *', timezone: 'Europe/Paris' } })).json();
    const due = Date.parse(task.next_run_at);
    t.ok(onCalendarMinute(app, task.next_run_at), `next_run_at ${task.next_run_at} is a whole minute of the calendar`);
    t.comment(`waiting for ${task.next_run_at} (${due === soon ? 'the minute aimed at' : 'a minute later: the request was slow'})`);
    const runs: any[] = await waitFor(
      async () => {
        const got: any[] = await (await app.api(`/api/scheduled-tasks/${task.id}/runs`)).json();
        return got.some((r) => r.status !== 'running') && got;
      },
      { timeoutMs: 75_000, everyMs: 250, what: 'a finished run of the cron task' },
    );

    const first = runs.at(-1);
    t.match(first, { status: 'completed', error: null }, 'the run completed');
    const late = Date.parse(first.triggered_at) - due;
    t.comment(`fired ${late} ms after its time`);
    t.ok(late >= 0 && late < 10_000, `at its time, within 10 s: ${late} ms`);
    t.equal(runs.filter((r) => Math.abs(Date.parse(r.triggered_at) - due) < 30_000).length, 1, 'that occurrence ran once');
    t.equal((await (await app.api(`/api/sessions/${first.session_id}`)).json()).intent, 'Bull');
    // Stopping removes the job scheduler.
    await app.api(`/api/scheduled-tasks/${task.id}/stop`, { method: 'POST' });
    t.notOk(
      (await (app.service.scheduled.jobs as unknown as { queue: { getJobSchedulers(): Promise<{ key: string }[]> } }).queue.getJobSchedulers()).some((s) => s.key === task.id),
      'no job scheduler after stop',
    );
  });
}
