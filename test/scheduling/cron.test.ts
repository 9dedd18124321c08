import t from 'tap';
import { CronClock, cronProblem, nextAfter, occurrences } from '../../src/platform/lib/cron.js';

const iso = (ds: Date[]) => ds.map((d) => d.toISOString());

t.test('syntax: what is accepted and why the rest is not', async (t) => {
  for (const ok of ['* * * * *', '*/15 9-17 * * 1-5', '0 0 1,15 * *', '5 4 * * sun', '0 0 * JAN-MAR MON', '0 12 * * 7', '@hourly', '@daily', '@weekly', '@monthly', ' 0 9 * * * ']) {
    t.equal(cronProblem(ok), null, `${ok} accepted`);
  }
  const bad: [string, RegExp][] = [
    ['* * * *', /5 fields/],
    ['0 0 9 * * *', /5 fields/],
    ['60 * * * *', /minute: 60/],
    ['* 24 * * *', /hour: 24/],
    ['* * 0 * *', /day of month: 0/],
    ['* * * 13 *', /month: 13/],
    ['* * * * 8', /day of week: 8/],
    ['5-1 * * * *', /backwards/],
    ['*/0 * * * *', /step/],
    ['1/x * * * *', /step/],
    ['@reboot', /unknown name/],
    ['@yearly', /unknown name/],
    ['a b c d e', /not a number/],
    ['0 0 30 2 *', /never occurs/],
    [',, * * * *', /not valid/],
  ];
  for (const [expr, why] of bad) t.match(cronProblem(expr), why, `${expr} refused`);
});

t.test('semantics: steps, names, either day field, leap days', async (t) => {
  t.same(iso(occurrences('*/20 * * * *', 'UTC', new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T01:00:00Z'), 10)), [
    '2026-01-01T00:00:00.000Z', '2026-01-01T00:20:00.000Z', '2026-01-01T00:40:00.000Z', '2026-01-01T01:00:00.000Z',
  ]);
  // 1st and 15th, or any Monday (June 2026: Mondays 1, 8, 15, 22, 29).
  t.same(iso(occurrences('0 0 1,15 * mon', 'UTC', new Date('2026-06-01T00:00:00Z'), new Date('2026-06-20T00:00:00Z'), 10)), [
    '2026-06-01T00:00:00.000Z', '2026-06-08T00:00:00.000Z', '2026-06-15T00:00:00.000Z',
  ]);
  t.equal(nextAfter('0 0 29 2 *', 'UTC', new Date('2026-11-23T00:00:00Z')).toISOString(), '2028-02-29T00:00:00.000Z');
  t.equal(nextAfter('0 9 * * *', 'Asia/Kolkata', new Date('2026-11-23T03:30:00Z')).toISOString(), '2026-11-24T03:30:00.000Z', 'strictly after');
  t.equal(nextAfter('@weekly', 'UTC', new Date('2026-11-23T00:00:00Z')).toISOString(), '2026-11-29T00:00:00.000Z', 'Sunday midnight');
  const t0 = performance.now();
  t.equal(occurrences('* * * * *', 'America/New_York', new Date('2026-01-01T00:00:00Z'), new Date('2026-12-31T00:00:00Z'), 1000).length, 1000);
  t.comment(`1000 occurrences in a DST zone: ${(performance.now() - t0).toFixed(0)} ms`);
});

t.test('DST: gaps run once past the change, overlaps once (hourly jobs keep their rhythm)', async (t) => {
  t.same(iso(occurrences('30 2 * * *', 'America/New_York', new Date('2026-03-07T00:00:00Z'), new Date('2026-03-10T00:00:00Z'), 10)), [
    '2026-03-07T07:30:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z',
  ]);
  t.same(iso(occurrences('30 1 * * *', 'America/New_York', new Date('2026-10-31T00:00:00Z'), new Date('2026-11-03T00:00:00Z'), 10)), [
    '2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z',
  ]);
  // Hourly across the spring gap: no duplicate at 03:30 EDT.
  const spring = iso(occurrences('30 * * * *', 'America/New_York', new Date('2026-03-08T05:00:00Z'), new Date('2026-03-08T09:00:00Z'), 10));
  t.same(spring, ['2026-03-08T05:30:00.000Z', '2026-03-08T06:30:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-08T08:30:00.000Z']);
  // Southern hemisphere (Sydney leaves DST on 2026-04-05 03:00 -> 02:00).
  const syd = iso(occurrences('0 * * * *', 'Australia/Sydney', new Date('2026-04-04T14:00:00Z'), new Date('2026-04-04T17:00:00Z'), 10));
  t.same(syd, ['2026-04-04T14:00:00.000Z', '2026-04-04T15:00:00.000Z', '2026-04-04T16:00:00.000Z', '2026-04-04T17:00:00.000Z'], 'hourly through the repeated hour');
});

t.test('CronClock: unshifted it is nextAfter; shifted it reads the calendar on a clock shiftMs ahead and answers real instants', async (t) => {
  const clock = new CronClock();
  const after = new Date('2026-03-08T06:59:30.250Z');
  t.equal(clock.next('*/5 * * * *', 'America/New_York', after).toISOString(), nextAfter('*/5 * * * *', 'America/New_York', after).toISOString(), 'production: no shift');
  // 20.25 s ahead: the calendar's 07:00:00 is real 06:59:39.750.
  clock.shiftMs = 20_250;
  t.equal(clock.next('* * * * *', 'UTC', after).toISOString(), '2026-03-08T06:59:39.750Z');
  t.same(iso(clock.occurrences('* * * * *', 'UTC', after, new Date('2026-03-08T07:01:40Z'), 10)), ['2026-03-08T06:59:39.750Z', '2026-03-08T07:00:39.750Z', '2026-03-08T07:01:39.750Z']);
});
