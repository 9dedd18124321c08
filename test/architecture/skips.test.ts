import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * A test that needs a tool or service goes without it in one way only, `needs(t, what, why)` in
 * test/helpers/needs.ts: a printed skip on a developer machine, a failure under CI=true (.ci/run
 * installs and starts everything, so a missing tool there is a regression, never a silent skip).
 * So CI is read in that helper alone; a file deciding for itself (`if (CI) t.fail(...)`, or a skip
 * that forgets CI) fails here.
 */
const root = resolve(import.meta.dirname, '../..');

/** Where reading CI is the point: the helper, and the runner that starts the services. */
const ALLOWED = new Set(['test/helpers/needs.ts', 'test/run.mjs']);

/** Files that still decide for themselves, with why. An entry may only go: the list shrinks. */
const DEBT: Record<string, string> = {
  // Being edited by another engineer while this rule was made; to route through needs().
  'test/console/browser.ts': 'its own chromium check',
};

const READS_CI = /\benv\.CI\b|\benv\[['"]CI['"]\]/;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return files(p);
    return /\.(ts|mjs|js)$/.test(f) ? [p] : [];
  });
}

t.test('only test/helpers/needs.ts decides between a printed skip and a CI failure', async (t) => {
  const reading = files(join(root, 'test'))
    .map((abs) => relative(root, abs))
    .filter((file) => file !== 'test/architecture/skips.test.ts' && READS_CI.test(readFileSync(join(root, file), 'utf8')));
  t.same(
    reading.filter((file) => !ALLOWED.has(file) && !(file in DEBT)),
    [],
    'skip through needs(t, what, why) (test/helpers/needs.ts): it prints why, and fails under CI=true',
  );
  t.same(
    Object.keys(DEBT).filter((file) => !reading.includes(file)),
    [],
    'debt entries that no longer read CI: remove them',
  );
});

t.test('needs(): printed skip on a developer machine, a failure under CI=true, nothing when present', async (t) => {
  const { needs } = await import('../helpers/needs.js');
  const saved = process.env.CI;
  t.teardown(() => {
    if (saved === undefined) delete process.env.CI;
    else process.env.CI = saved;
  });
  const seen: string[] = [];
  const reporter = { fail: (m: string) => seen.push(`fail: ${m}`), comment: (m: string) => seen.push(`comment: ${m}`) };
  delete process.env.CI;
  t.equal(needs(reporter, 'the tmux tests', 'tmux is not installed'), 'tmux is not installed');
  process.env.CI = 'true';
  t.equal(needs(reporter, 'the tmux tests', 'tmux is not installed'), 'tmux is not installed');
  t.equal(needs(reporter, 'the tmux tests', false), false);
  t.same(seen, ['comment: skipped the tmux tests: tmux is not installed', 'fail: the tmux tests must run in CI: tmux is not installed']);
});
