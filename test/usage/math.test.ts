import t from 'tap';
import { costOf } from '../../src/features/usage/index.js';
import { dayStart, periodBounds } from '../../src/features/usage/periods.js';
import { isCalendarDay } from '../../src/features/usage/schemas.js';
import { roundCost } from '../../src/features/usage/store.js';

/**
 * The arithmetic of usage and budgets, without a service (the fast tier): what a call costs, and
 * where a budget's period starts and resets in the install's time zone (docs/models-and-usage.md).
 */

const PRICE = { input: 3, cached_input: 0.5, output: 15 };

t.test('costOf: fresh prompt tokens, cached ones at their own price, and the output, per million', async (t) => {
  t.equal(costOf(PRICE, 1000, 200, 100), (800 * 3 + 200 * 0.5 + 100 * 15) / 1e6);
  t.equal(costOf(PRICE, 1000, 0, 0), 0.003, 'no cache: every prompt token at the input price');
  t.equal(costOf(PRICE, 100, 500, 0), (100 * 0.5) / 1e6, 'more cached than sent (a provider quirk): at most the prompt is cached');
  t.equal(costOf(PRICE, 0, 0, 0), 0);
  t.equal(costOf(null, 1000, 0, 100), null, 'a model without a price has no cost, not a cost of 0');
});

t.test('roundCost removes float noise at 1e-10', async (t) => {
  t.equal(roundCost(0.1 + 0.2), 0.3);
  t.equal(roundCost(0.00396000000000001), 0.00396);
  t.equal(roundCost(0), 0);
});

t.test('periodBounds in UTC: a day, a month, the year end, and total', async (t) => {
  const now = Date.UTC(2026, 10, 27, 13, 5);
  t.same(periodBounds('day', 'UTC', now), { start: Date.UTC(2026, 10, 27), resets: Date.UTC(2026, 10, 28) });
  t.same(periodBounds('month', 'UTC', now), { start: Date.UTC(2026, 10, 1), resets: Date.UTC(2026, 11, 1) });
  t.same(periodBounds('month', 'UTC', Date.UTC(2026, 11, 31, 23, 59)), { start: Date.UTC(2026, 11, 1), resets: Date.UTC(2027, 0, 1) }, 'December resets on 1 January');
  t.same(periodBounds('day', 'UTC', Date.UTC(2026, 10, 27)), { start: Date.UTC(2026, 10, 27), resets: Date.UTC(2026, 10, 28) }, 'midnight belongs to the day it starts');
  t.same(periodBounds('total', 'UTC', now), { start: 0, resets: null }, 'total never resets');
});

t.test('periodBounds in a zone with daylight saving: local midnights, a 23-hour day', async (t) => {
  // Europe/Paris moved from +01:00 to +02:00 at 02:00 on Sunday 29 March 2026.
  const dstDay = periodBounds('day', 'Europe/Paris', Date.UTC(2026, 2, 29, 12));
  t.same(dstDay, { start: Date.UTC(2026, 2, 28, 23), resets: Date.UTC(2026, 2, 29, 22) });
  t.equal((dstDay.resets! - dstDay.start) / 3_600_000, 23, 'the day of the change has 23 hours');
  t.same(periodBounds('month', 'Europe/Paris', Date.UTC(2026, 2, 15)), { start: Date.UTC(2026, 1, 28, 23), resets: Date.UTC(2026, 2, 31, 22) }, 'March starts in winter time, April in summer time');
  t.same(periodBounds('day', 'Europe/Paris', Date.UTC(2026, 10, 27, 23, 30)), { start: Date.UTC(2026, 10, 27, 23), resets: Date.UTC(2026, 10, 28, 23) }, 'half past midnight in Paris is already the next day');
  t.same(periodBounds('day', 'America/New_York', Date.UTC(2026, 10, 27, 3)), { start: Date.UTC(2026, 10, 26, 5), resets: Date.UTC(2026, 10, 27, 5) }, 'and 22:00 in New York is still the day before');
});

t.test('dayStart: a calendar day as its local midnight, days later across a change', async (t) => {
  t.equal(dayStart('2026-03-29', 'Europe/Paris'), Date.UTC(2026, 2, 28, 23));
  t.equal(dayStart('2026-03-29', 'Europe/Paris', 1), Date.UTC(2026, 2, 29, 22));
  t.equal(dayStart('2026-12-31', 'UTC', 1), Date.UTC(2027, 0, 1), 'past the year end');
});

t.test('isCalendarDay: only days that exist', async (t) => {
  t.same(
    ['2026-02-28', '2028-02-29', '2026-02-29', '2026-02-30', '2026-13-01', '2026-00-10', '2026-04-31'].map(isCalendarDay),
    [true, true, false, false, false, false, false],
  );
});
