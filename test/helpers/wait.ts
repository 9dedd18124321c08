/**
 * The one way tests wait: poll a condition until it holds (a truthy value, answered), or fail
 * saying what was awaited. Never a fixed sleep where a condition can be observed.
 */
export async function waitFor<T>(probe: () => T | Promise<T>, opts: { timeoutMs?: number; everyMs?: number; what?: string } = {}): Promise<Truthy<T>> {
  const { timeoutMs = 10_000, everyMs = 10, what = 'a condition' } = opts;
  const until = Date.now() + timeoutMs;
  for (;;) {
    // A probe that never answers (a request to a hung server) fails here too, not at tap's timeout.
    const v = await deadline(Promise.resolve(probe()), Math.max(until - Date.now(), 0) + PROBE_GRACE_MS, `a check of ${what} to answer`);
    if (v) return v as Truthy<T>;
    if (Date.now() > until) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await elapse(everyMs);
  }
}

/** How long a probe begun just before the deadline may still take to answer. */
const PROBE_GRACE_MS = 2000;

/**
 * Reject naming `what` when `p` has not settled within `ms`: every await of something outside the
 * test (a process exit, a socket event, a response) gets one, so a hang fails with its name
 * instead of running into tap's timeout.
 */
export function deadline<X>(p: Promise<X>, ms: number, what: string): Promise<X> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`deadline: ${what} not done within ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * Let `ms` pass to show that `what` does NOT happen within it (a second delivery, progress while
 * paused, a process dying with its parent). No condition can be awaited for an absence: the window
 * is the claim, so it is named here and greppable (test/architecture/no-sleeps.test.ts).
 */
export function quietFor(ms: number, what: string): Promise<void> {
  if (!what) throw new Error('quietFor: say what must not happen');
  return elapse(ms);
}

/**
 * A pause that is part of the scenario, not a wait for anything: a model or store made slow on
 * purpose, a slow client's gap between chunks, a load pattern's jitter, a sampler's period.
 */
export function pace(ms: number, why: string): Promise<void> {
  if (!why) throw new Error('pace: say why the scenario pauses');
  return elapse(ms);
}

/** What a probe answers once it holds: its value without the falsy ones. */
type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

const elapse =
 (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
