/**
 * Budget periods in the install's time zone (AGENTSVC_TIMEZONE): a day starts at local midnight,
 * a month on its first day at local midnight, across daylight-saving changes.
 */

export type Period = 'day' | 'month' | 'total';

const formats = new Map<string, Intl.DateTimeFormat>();

function format(tz: string): Intl.DateTimeFormat {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formats.set(tz, f);
  }
  return f;
}

/** The wall-clock fields of `at` in `tz`. */
function local(at: number, tz: string) {
  const p: Record<string, number> = {};
  for (const part of format(tz).formatToParts(at)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return p as { year: number; month: number; day: number; hour: number; minute: number; second: number };
}

/** The instant when the wall clock of `tz` shows y-m-d 00:00 (month and day may overflow, as Date.UTC allows). */
function midnight(y: number, m: number, d: number, tz: string): number {
  const wall = Date.UTC(y, m - 1, d);
  let at = wall;
  // Two corrections settle the offset, also when midnight is on the other side of a DST change.
  for (let i = 0; i < 2; i++) {
    const l = local(at, tz);
    const shown = Date.UTC(l.year, l.month - 1, l.day, l.hour, l.minute, l.second);
    at += wall - shown;
  }
  return at;
}

/** Where the period holding `now` began and when it resets (null: `total` never resets). */
export function periodBounds(period: Period, tz: string, now = Date.now()): { start: number; resets: number | null } {
  if (period === 'total') return { start: 0, resets: null };
  const l = local(now, tz);
  if (period === 'day') return { start: midnight(l.year, l.month, l.day, tz), resets: midnight(l.year, l.month, l.day + 1, tz) };
  return { start: midnight(l.year, l.month, 1, tz), resets: midnight(l.year, l.month + 1, 1, tz) };
}

/** `YYYY-MM-DD` as the instant of that day's midnight in `tz`, `plusDays` later. */
export function dayStart(day: string, tz: string, plusDays = 0): number {
  const [y, m, d] = day.split('-').map(Number);
  return midnight(y, m, d + plusDays, tz);
}
