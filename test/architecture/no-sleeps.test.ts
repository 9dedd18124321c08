import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * Tests wait on a condition (`waitFor` in test/helpers/wait.ts), never for a fixed time: a fixed
 * sleep is either too short on a loaded machine (a flaky test) or longer than needed everywhere (a
 * slow suite). Two pauses have a reason and a name there, so they are greppable: `quietFor(ms, what)`
 * when the test proves that something does NOT happen within a window, and `pace(ms, why)` when the
 * pause is part of the scenario (a model made slow on purpose, a slow client, a load's jitter).
 * Any other timer-resolved promise, sleep or delay call, or promise-timers import under test/ fails here.
 */
const root = resolve(import.meta.dirname, '../..');
const testDir = join(root, 'test');

/** The one file allowed to resolve a promise with a timer. */
const WAIT_HELPER = 'test/helpers/wait.ts';

/**
 * Files that may keep a bare sleep for now, with why. An entry may only go: the test fails when
 * one no longer has a sleep, so the list shrinks.
 */
const DEBT: Record<string, string> = {
  // A plain Node child process (no TypeScript loader), so it cannot import wait.ts: its delay is the
  // scripted slowness of the fake MCP server (a `pace`).
  'test/fixtures/mcp-server.mjs': 'a child process without the TypeScript loader',
};

/** What a bare sleep looks like, matched on a line's code (comments and string literals blanked). */
const SLEEPS: [RegExp, string][] = [
  [/=>\s*setTimeout\(\s*[\w$]+\s*,/, 'a promise resolved by a timer'],
  [/\b(sleep|delay)\s*\(/, 'a sleep( or delay( helper'],
];
/** An import of the promise timers, matched on the whole line (the module name is a string). */
const TIMERS_PROMISES = /(from\s+|import\(\s*)['"](node:)?timers\/promises['"]/;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return f === 'node_modules' ? [] : files(p);
    return /\.(ts|mjs|js)$/.test(f) ? [p] : [];
  });
}

/** The kind of bare sleep on one line, if any. */
function sleepIn(line: string): string | undefined {
  if (TIMERS_PROMISES.test(line)) return 'node:timers/promises';
  // Comments may name what they avoid; a shell command given to a sandbox ('sleep 30') is no sleep of the test.
  const code = line.replace(/\/\/.*$/, '').replace(/'[^']*'|"[^"]*"|`[^`]*`/g, "''");
  return SLEEPS.find(([re]) => re.test(code))?.[1];
}

/** The files of test/ the rule reads: all but the helper that owns the timer and this file (its examples). */
const scanned = () => files(testDir).filter((abs) => ![WAIT_HELPER, 'test/architecture/no-sleeps.test.ts'].includes(relative(root, abs)));

/** Every line of test/ with a bare sleep, by file, as `file:line: kind: text`. */
function bareSleeps(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const abs of scanned()) {
    const file = relative(root, abs);
    readFileSync(abs, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const kind = sleepIn(line);
        if (kind) found.set(file, [...(found.get(file) ?? []), `${file}:${i + 1}: ${kind}: ${line.trim()}`]);
      });
  }
  return found;
}

t.test('no bare sleep under test/: waitFor a condition, or quietFor / pace with a reason', async (t) => {
  const found = bareSleeps();
  const fresh = [...found].filter(([file]) => !(file in DEBT)).flatMap(([, lines]) => lines);
  t.same(fresh, [], 'wait with waitFor (test/helpers/wait.ts); quietFor(ms, what) only to prove something does not happen');
  const stale = Object.keys(DEBT).filter((file) => !found.has(file));
  t.same(stale, [], 'debt entries whose file has no sleep any more: remove them');
});

t.test('the rule catches the forms it names', async (t) => {
  t.equal(sleepIn('await new Promise((r) => setTimeout(r, 100));'), 'a promise resolved by a timer');
  t.equal(sleepIn('await new Promise((resolve) => setTimeout(resolve, ms));'), 'a promise resolved by a timer');
  t.equal(sleepIn('for (;;) await sleep(50);'), 'a sleep( or delay( helper');
  t.equal(sleepIn("import { setTimeout as wait } from 'node:timers/promises';"), 'node:timers/promises');
  t.equal(sleepIn("const { setTimeout: wait } = await import('timers/promises');"), 'node:timers/promises');
  t.equal(sleepIn("await quietFor(300, 'a second delivery');"), undefined, 'the named window is allowed');
  t.equal(sleepIn('const timer = setTimeout(() => reject(new Error("deadline")), ms);'), undefined, 'a deadline is no sleep');
  t.equal(sleepIn('const delay = monitorEventLoopDelay({ resolution: 5 });'), undefined, 'a variable named delay is no call');
  t.equal(sleepIn("c.exec('sleep 20; echo done');"), undefined, 'a shell command for a sandbox is no sleep of the test');
  t.equal(sleepIn('// no sleep(100) here: waitFor'), undefined, 'a comment is no sleep');
});

t.test('every kept pause says why', async (t) => {
  const unnamed: string[] = [];
  let kept = 0;
  for (const abs of scanned()) {
    const file = relative(root, abs);
    readFileSync(abs, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const calls = line.match(/\b(quietFor|pace)\(/g)?.length ?? 0;
        const named = line.match(/\b(quietFor|pace)\(.*?,\s*['"`]/g)?.length ?? 0;
        kept += calls;
        if (named < calls) unnamed.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }

  t.comment(`${kept} named pauses (quietFor / pace) under test/`);
  t.same(unnamed, [], 'quietFor(ms, what) and pace(ms, why) take their reason as a string literal');
});
