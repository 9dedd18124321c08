import t from 'tap';
import { build } from '../helpers/app.js';

/** Scheduled tasks REST (docs/scale-out.md "Scheduled tasks"): records, validation, isolation, calendar. */

const base = { title: 'Morning report', prompt: 'Summarise the news', cron: '0 9 * * *', timezone: 'America/New_York' };

t.test('create, read, list, patch, stop/start, delete; the record of docs/scale-out.md', async (t) => {
  const app = await build(t, { AGENTSVC_MODELS: 'gpt-4o-mini,other-model' });
  const res = await app.api('/api/scheduled-tasks', { method: 'POST', json: base });
  t.equal(res.status, 201);
  const task = await res.json();
  t.match(task.id, /^task_[A-Za-z0-9]+$/);
  t.same(Object.keys(task).sort(), [
    'created_at', 'cron', 'enabled', 'expires_at', 'id', 'last_run', 'model', 'next_run_at', 'prompt', 'skip_confirmations', 'timezone', 'title', 'updated_at',
  ]);
  t.match(task, { ...base, enabled: true, expires_at: null, skip_confirmations: false, model: null, last_run: null });
  // 09:00 in New York is 13:00 or 14:00 UTC depending on DST.
  t.match(task.next_run_at, /T1[34]:00:00\.000Z$/);
  t.ok(new Date(task.next_run_at).getTime() > Date.now());

  t.same(await (await app.api(`/api/scheduled-tasks/${task.id}`)).json(), task, 'GET one');
  t.same(await (await app.api('/api/scheduled-tasks')).json(), [task], 'GET list');

  const patched = await (await app.api(`/api/scheduled-tasks/${task.id}`, { method: 'PATCH', json: { title: 'Evening', cron: '@hourly', model: 'other-model' } })).json();
  t.match(patched, { title: 'Evening', cron: '@hourly', model: 'other-model', prompt: base.prompt, timezone: base.timezone });
  t.match(patched.next_run_at, /T\d\d:00:00\.000Z$/);

  const stopped = await (await app.api(`/api/scheduled-tasks/${task.id}/stop`, { method: 'POST' })).json();
  t.match(stopped, { enabled: false, next_run_at: null });
  const started = await (await app.api(`/api/scheduled-tasks/${task.id}/start`, { method: 'POST' })).json();
  t.match(started, { enabled: true });
  t.match(started.next_run_at, /T\d\d:00:00\.000Z$/, 'the next full hour again');
  t.ok(Date.parse(started.next_run_at) > Date.now(), 'in the future');
  t.same(await (await app.api(`/api/scheduled-tasks/${task.id}/runs`)).json(), []);

  const del = await app.api(`/api/scheduled-tasks/${task.id}`, { method: 'DELETE' });
  t.equal(del.status, 204);
  t.equal((await app.api(`/api/scheduled-tasks/${task.id}`)).status, 404);
  t.equal((await app.api(`/api/scheduled-tasks/${task.id}`, { method: 'DELETE' })).status, 404);

  const defaults = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'x', prompt: 'y', cron: '*/5 * * * *' } })).json();
  t.equal(defaults.timezone, Intl.DateTimeFormat().resolvedOptions().timeZone, 'timezone defaults to the system one');
});

t.test('bad input is a 422 naming the field, and creates or changes nothing', async (t) => {
  const app = await build(t);
  const bad: [string, Record<string, unknown>, string][] = [
    ['six fields', { ...base, cron: '0 0 9 * * *' }, 'cron'],
    ['nonsense cron', { ...base, cron: 'every day' }, 'cron'],
    ['out of range', { ...base, cron: '61 9 * * *' }, 'cron'],
    ['unknown name', { ...base, cron: '@reboot' }, 'cron'],
    ['unknown zone', { ...base, timezone: 'Mars/Olympus_Mons' }, 'timezone'],
    ['expired', { ...base, expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
    ['not a date', { ...base, expires_at: 'tomorrow' }, 'expires_at'],
    ['unknown model', { ...base, model: 'no-such-model' }, 'model'],
    ['empty title', { ...base, title: '' }, 'title'],
    ['long title', { ...base, title: 'x'.repeat(201) }, 'title'],
    ['empty prompt', { ...base, prompt: '' }, 'prompt'],
    ['long cron', { ...base, cron: `${'1,'.repeat(60)}1 * * * *` }, 'cron'],
    ['NUL', { ...base, title: 'a\u0000b' }, 'title'],
    ['unknown field', { ...base, colour: 'red' }, ''],
    ['missing cron', { title: 'x', prompt: 'y' }, 'cron'],
  ];
  for (const [what, body, field] of bad) {
    const res = await app.api('/api/scheduled-tasks', { method: 'POST', json: body });
    const out = await res.json();
    t.equal(res.status, 422, `${what}: 422`);
    t.equal(out.code, 'VALIDATION_ERROR', what);
    if (field) t.match(JSON.stringify(out.detail), field, `${what}: names ${field}`);
  }
  t.same(await (await app.api('/api/scheduled-tasks')).json(), [], 'nothing was created');

  const task = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: base })).json();
  for (const [what, body] of [
    ['bad cron', { cron: '* *' }],
    ['bad zone', { timezone: 'Nowhere/City' }],
    ['past expiry', { expires_at: '2001-01-01T00:00:00Z' }],
    ['null title', { title: null }],
  ] as const) {
    t.equal((await app.api(`/api/scheduled-tasks/${task.id}`, { method: 'PATCH', json: body })).status, 422, `PATCH ${what}`);
  }
  t.same(await (await app.api(`/api/scheduled-tasks/${task.id}`)).json(), task, 'unchanged');

  for (const [what, q] of [
    ['from after to', 'from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z'],
    ['over 366 days', 'from=2026-01-01T00:00:00Z&to=2027-01-03T00:00:00Z'],
    ['missing to', 'from=2026-01-01T00:00:00Z'],
    ['not dates', 'from=yesterday&to=today'],
  ]) {
    const res = await app.api(`/api/scheduled-tasks/calendar?${q}`);
    t.equal(res.status, 422, `calendar ${what}: 422`);
  }
});

t.test("another user's task is a 404 everywhere; lists are per user", async (t) => {
  const app = await build(t);
  const bob = await app.newUser('bob');
  const mine = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: base })).json();
  for (const [method, path] of [
    ['GET', ''],
    ['PATCH', ''],
    ['DELETE', ''],
    ['POST', '/start'],
    ['POST', '/stop'],
    ['GET', '/runs'],
  ]) {
    const res = await app.api(`/api/scheduled-tasks/${mine.id}${path}`, { method, key: bob.key, json: method === 'PATCH' ? { title: 'mine now' } : undefined });
    t.equal(res.status, 404, `${method} ${path || '/'} by another user`);
  }
  t.same(await (await app.api('/api/scheduled-tasks', { key: bob.key })).json(), []);
  const cal = await (await app.api('/api/scheduled-tasks/calendar?from=2026-12-01T00:00:00Z&to=2026-12-02T00:00:00Z', { key: bob.key })).json();
  t.same(cal, [], "bob's calendar holds none of admin's tasks");
  t.same(await (await app.api(`/api/scheduled-tasks/${mine.id}`)).json(), mine, 'unchanged');
});

t.test('calendar: occurrences in the task time zone across DST changes, inclusive, enabled tasks only', async (t) => {
  const app = await build(t);
  const ny = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: base })).json();
  const cal = async (from: string, to: string) => (await (await app.api(`/api/scheduled-tasks/calendar?from=${from}&to=${to}`)).json()) as any[];

  // New York leaves DST on 2026-11-01: 09:00 is 13:00Z before, 14:00Z after.
  const autumn = await cal('2026-10-30T13:00:00Z', '2026-11-03T14:00:00Z');
  t.same(autumn, [{ task_id: ny.id, title: base.title, occurrences: ['2026-10-30T13:00:00.000Z', '2026-10-31T13:00:00.000Z', '2026-11-01T14:00:00.000Z', '2026-11-02T14:00:00.000Z', '2026-11-03T14:00:00.000Z'] }], 'both ends inclusive, DST honoured');

  // Spring forward (2026-03-08): 02:30 does not exist that day in New York.
  const early = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { ...base, title: 'early', cron: '30 2 * * *' } })).json();
  const spring = (await cal('2026-03-07T00:00:00Z', '2026-03-10T00:00:00Z')).find((c) => c.task_id === early.id);
  t.same(spring.occurrences, ['2026-03-07T07:30:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z'], '02:30 EST; on the change day 03:30 EDT (02:30 does not exist), once; then 02:30 EDT');

  // Fall back (2026-11-01): 01:30 exists twice; a daily job runs once, at the first.
  const late = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { ...base, title: 'late', cron: '30 1 * * *' } })).json();
  const fall = (await cal('2026-10-31T00:00:00Z', '2026-11-03T00:00:00Z')).find((c) => c.task_id === late.id);
  t.same(fall.occurrences, ['2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z'], 'once on the day 01:30 repeats');

  // Europe/Berlin, every 30 minutes over the autumn change (2026-10-25, 03:00 -> 02:00).
  const berlin = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { ...base, title: 'half-hourly', cron: '*/30 * * * *', timezone: 'Europe/Berlin' } })).json();
  const b = (await cal('2026-10-24T23:00:00Z', '2026-10-25T02:00:00Z')).find((c) => c.task_id === berlin.id);
  const gaps = b.occurrences.slice(1).map((x: string, i: number) => (Date.parse(x) - Date.parse(b.occurrences[i])) / 60000);
  t.ok(gaps.every((g: number) => g === 30), `every 30 min in real time across the change: ${b.occurrences.join(', ')}`);
  t.equal(b.occurrences.length, 7, 'the repeated hour included');

  // At most 1000 per task; disabled tasks are left out.
  const often = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { ...base, title: 'often', cron: '* * * * *' } })).json();
  const many = (await cal('2026-01-01T00:00:00Z', '2026-12-31T00:00:00Z')).find((c) => c.task_id === often.id);
  t.equal(many.occurrences.length, 1000);
  await app.api(`/api/scheduled-tasks/${often.id}/stop`, { method: 'POST' });
  t.notOk((await cal('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z')).some((c) => c.task_id === often.id), 'a stopped task is not in the calendar');

  // An expiring task has no occurrence after expires_at.
  const ends = new Date(Date.now() + 3 * 86_400_000);
  const exp = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { ...base, title: 'ending', expires_at: ends.toISOString() } })).json();
  const e = (await cal(new Date().toISOString(), new Date(Date.now() + 10 * 86_400_000).toISOString())).find((c) => c.task_id === exp.id);
  t.ok(e.occurrences.length >= 2 && e.occurrences.length <= 3, `${e.occurrences.length} occurrences before expires_at`);
  t.ok(e.occurrences.every((x: string) => Date.parse(x) <= ends.getTime()));
});
