/**
 * Standard 5-field cron (minute hour day-of-month month day-of-week; `*`, lists, ranges, steps,
 * month and day names; @hourly @daily @weekly @monthly) evaluated in an IANA time zone with DST:
 * - a wall time that does not exist (spring forward, e.g. 02:30 in New York on 2026-03-08) runs at
 *   the same distance past the change (03:30 EDT), once;
 * - a wall time that exists twice (fall back) runs once, at the first of the two, except for a job
 *   that runs every hour (e.g. every 30 minutes), which keeps its rhythm through both.
 * Day-of-month and day-of-week both restricted: either matches (as Vixie cron).
 * Our own (small) evaluator: cron-parser 4.9 produced an extra occurrence around a DST change and
 * took seconds for 1,000 occurrences in a time zone.
 */

const NAMED: Record<string, string> = { '@hourly': '0 * * * *', '@daily': '0 0 * * *', '@weekly': '0 0 * * 0', '@monthly': '0 0 1 * *' };
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  { name: 'day of week', min: 0, max: 7, names: DAYS },
];
const DAY_MS = 86_400_000;
/** Far enough for any valid expression (Feb 29 on a Monday is at most ~28 years away; we refuse none of them, but cap the search). */
const SEARCH_DAYS = 366 * 30;

export class CronError extends Error {}

interface Cron {
  minutes: number[];
  hours: number[];
  doms: Set<number>;
  months: Set<number>;
  dows: Set<number>;
  /** Both day fields restricted: a day matches when either does. */
  either: boolean;
}

function value(s: string, f: (typeof FIELDS)[number]): number {
  const named = f.names?.indexOf(s.toUpperCase()) ?? -1;
  if (named >= 0) return named + f.min;
  if (!/^\d+$/.test(s)) throw new CronError(`${f.name}: ${JSON.stringify(s)} is not a number${f.names ? ' or a name' : ''}`);
  const n = Number(s);
  if (n < f.min || n > f.max) throw new CronError(`${f.name}: ${n} is outside ${f.min}-${f.max}`);
  return n;
}

function field(src: string, f: (typeof FIELDS)[number]): { values: Set<number>; star: boolean } {
  const values = new Set<number>();
  for (const part of src.split(',')) {
    const [range, stepS, extra] = part.split('/');
    if (extra !== undefined || range === '') throw new CronError(`${f.name}: ${JSON.stringify(part)} is not valid`);
    const step = stepS === undefined ? 1 : Number(stepS);
    if (!Number.isInteger(step) || step < 1 || (stepS !== undefined && !/^\d+$/.test(stepS))) throw new CronError(`${f.name}: step ${JSON.stringify(stepS)} is not a positive number`);
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [f.min, f.name === 'day of week' ? 6 : f.max];
    else if (range.includes('-')) {
      const [a, b] = range.split('-');
      [lo, hi] = [value(a, f), value(b, f)];
      if (lo > hi) throw new CronError(`${f.name}: range ${range} runs backwards`);
    } else {
      lo = value(range, f);
      hi = stepS === undefined ? lo : f.max;
    }
    for (let v = lo; v <= hi; v += step) values.add(f.name === 'day of week' && v === 7 ? 0 : v);
  }
  return { values, star: src === '*' || src.startsWith('*/') };
}

export function parseCron(expr: string): Cron {
  const e = expr.trim();
  const src = e.startsWith('@') ? NAMED[e] : e;
  if (!src) throw new CronError(`unknown name ${JSON.stringify(e)}; use @hourly, @daily, @weekly or @monthly`);
  const parts = src.split(/\s+/);
  if (parts.length !== 5) throw new CronError(`expected 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`);
  const [mi, h, dom, mon, dow] = parts.map((p, i) => field(p, FIELDS[i]));
  const cron: Cron = {
    minutes: [...mi.values].sort((a, b) => a - b),
    hours: [...h.values].sort((a, b) => a - b),
    doms: dom.values,
    months: mon.values,
    dows: dow.values,
    either: !dom.star && !dow.star,
  };
  // 30 February and the like: valid syntax, never due.
  if (!cron.either && ![...cron.months].some((m) => [...cron.doms].some((d) => d <= [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]))) {
    throw new CronError('that day of month never occurs in those months');
  }
  return cron;
}

/** Why `expr` is not a cron expression we accept, or null when it is. */
export function cronProblem(expr: string): string | null {
  try {
    parseCron(expr);
    return null;
  } catch (e) {
    if (e instanceof CronError) return e.message;
    throw e;
  }
}

/** Whether `tz` is an IANA time zone this runtime knows. */
export function knownTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return tz.length > 0;
  } catch {
    return false;
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** Minutes to add to UTC for the wall time in `tz` at instant `t`. */
function offsetAt(tz: string, t: number): number {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' });
    formats.set(tz, f);
  }
  const p: Record<string, number> = {};
  for (const { type, value } of f.formatToParts(new Date(t))) if (type !== 'literal') p[type] = Number(value);
  const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute);
  return Math.round((wall - Math.floor(t / 60_000) * 60_000) / 60_000);
}

/** The instants of wall time `wall` (as if UTC, ms) in `tz`: one, two in a fall-back overlap, or, in a gap, the shifted one. */
function instantsOf(tz: string, wall: number): number[] {
  const before = offsetAt(tz, wall - DAY_MS / 2);
  const after = offsetAt(tz, wall + DAY_MS / 2);
  const fits = [...new Set([before, after])].map((o) => wall - o * 60_000).filter((t) => offsetAt(tz, t) * 60_000 + t === wall);
  if (fits.length) return fits.sort((x, y) => x - y);
  // In the gap: as far past the change as the wall time is into the gap.
  return [wall - before * 60_000];
}

function dayMatches(c: Cron, day: Date): boolean {
  if (!c.months.has(day.getUTCMonth() + 1)) return false;
  const dom = c.doms.has(day.getUTCDate());
  const dow = c.dows.has(day.getUTCDay());
  return c.either ? dom || dow : dom && dow;
}

/** Occurrences after `after` (exclusive) up to `to` (inclusive), at most `max`, in order. */
function* walk(c: Cron, tz: string, after: number, to: number): Generator<number> {
  // Wall-clock days, starting the day before `after` in any zone (offsets are within ±14 h).
  let day = Math.floor((after + offsetAt(tz, after) * 60_000) / DAY_MS) * DAY_MS - DAY_MS;
  let last = after;
  const every = c.hours.length === 24;
  for (let i = 0; i < SEARCH_DAYS; i++, day += DAY_MS) {
    if (day - 2 * DAY_MS > to) return;
    if (!dayMatches(c, new Date(day))) continue;
    // A day's instants are sorted together: in a fall-back overlap they interleave.
    const instants: number[] = [];
    for (const h of c.hours) {
      for (const m of c.minutes) {
        const all = instantsOf(tz, day + h * 3_600_000 + m * 60_000);
        // A repeated wall time runs twice only for a job that runs every hour (as Vixie cron).
        instants.push(...(every ? all : all.slice(0, 1)));
      }
    }
    for (const t of instants.sort((x, y) => x - y)) {
      if (t <= last) continue;
      if (t > to) return;
      last = t;
      yield t;
    }
  }
}

/** The first occurrence strictly after `after`, in `tz`. */
export function nextAfter(expr: string, tz: string, after: Date): Date {
  for (const t of walk(parseCron(expr), tz, after.getTime(), Number.MAX_SAFE_INTEGER)) return new Date(t);
  throw new CronError(`no occurrence of ${expr} in the next ${SEARCH_DAYS / 366} years`);
}

/** Occurrences in [from, to] inclusive, at most `max`. */
export function occurrences(expr: string, tz: string, from: Date, to: Date, max: number): Date[] {
  const out: Date[] = [];
  for (const t of walk(parseCron(expr), tz, from.getTime() - 1, to.getTime())) {
    out.push(new Date(t));
    if (out.length >= max) break;
  }
  return out;
}

/**
 * The clock the schedulers read the cron calendar on. In production it is the real one (`shiftMs`
 * 0). A test sets `shiftMs` so that the calendar's next minute begins a few seconds from now, where
 * it would otherwise wait up to a minute for it: occurrences are computed on the shifted clock and
 * handed back as real instants, which stay due by the real clock (the database's `now()`, BullMQ's
 * delays), so everything after the calendar runs as in production.
 */
export class CronClock {
  shiftMs = 0;

  /** The first occurrence strictly after `after`, read on this clock, as a real instant. */
  next(expr: string, tz: string, after: Date): Date {
    const s = this.shiftMs;
    return new Date(nextAfter(expr, tz, new Date(after.getTime() + s)).getTime() - s);
  }

  /** Occurrences in [from, to] inclusive, at most `max`, read on this clock, as real instants. */
  occurrences(expr: string, tz: string, from: Date, to: Date, max: number): Date[] {
    const s = this.shiftMs;
    return occurrences(expr, tz, new Date(from.getTime() + s), new Date(to.getTime() + s), max).map((d) => new Date(d.getTime() - s));
  }
}
