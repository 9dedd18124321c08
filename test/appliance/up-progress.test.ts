import t from 'tap';
/** The `t` of a subtest: what the helpers below use of it. */
type Test = { teardown(fn: () => unknown): void; comment(...m: unknown[]): void; ok(v: unknown, msg: string): unknown };
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl } from '../helpers/db.js';
import { BIN, cleanEnv, kill } from '../helpers/cli.js';
import { assertFreshBuild } from './cli-helpers.js';

/**
 * `agentsvc up` says what it does from its first instant to its listening line (docs/operations.md,
 * "Start"): the home and its lock, the database (created on the very first start, started, or
 * reached through DATABASE_URL), the migrations, the modules (runner, plugins), the REST API, the
 * background jobs. Each start's lines are checked in order; the time from spawn to each line is
 * printed as a comment.
 */

assertFreshBuild();

interface Line {
  ms: number;
  text: string;
}

/** `up --port 0` until its listening line, then SIGINT; every stdout line with its time from spawn. */
async function start(t: Test, env: Record<string, string>): Promise<Line[]> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [BIN, 'up', '--port', '0'], { env: { ...cleanEnv(), OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => kill(child, 'SIGKILL'));
  const lines: Line[] = [];
  let partial = '';
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 90 s:\n${lines.map((l) => l.text).join('\n')}\n${stderr}`)), 90_000);
    child.stdout!.on('data', (c) => {
      const parts = (partial + c).split('\n');
      partial = parts.pop() ?? '';
      for (const text of parts) lines.push({ ms: Date.now() - t0, text });
      if (lines.some((l) => l.text.startsWith('agentsvc listening on '))) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`up exited ${code} before listening:\n${lines.map((l) => l.text).join('\n')}\n${stderr}`));
    });
  });
  await kill(child, 'SIGINT');
  t.comment(lines.filter((l) => l.text.startsWith('agentsvc')).map((l) => `${String(l.ms).padStart(6)} ms  ${l.text.slice(0, 110)}`).join('\n'));
  return lines;
}

/** Each pattern matches a line after the line the previous one matched; the index of each. */
function inOrder(t: Test, lines: Line[], patterns: RegExp[]) {
  let from = 0;
  for (const re of patterns) {
    const at = lines.findIndex((l, i) => i >= from && re.test(l.text));
    t.ok(at >= 0, `${re} after line ${from}`);
    if (at < 0) return t.comment(`the lines from ${from}:\n${lines.slice(from).map((l) => l.text).join('\n')}`);
    from = at + 1;
  }
}

const esc = (s: string) => s.replace(/[/.*+?^${}()|[\]\\]/g, '\\$&');

t.test('the first start and the next one say what they do, in order, until listening', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-up-steps-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const h = esc(home);
  const after = [
    /^agentsvc: starting \d+ modules$/,
    /^agentsvc: local runner ready$/,
    /^agentsvc: plugins: \d+ loaded \(skills, mcp, integrations\)$/,
    /^agentsvc: building the REST API and its OpenAPI document$/,
    /^agentsvc: starting \d+ background jobs \(.*scheduler.*\)$/,
    /^agentsvc listening on http:\/\/127\.0\.0\.1:\d+$/,
  ];

  const first = await start(t, { AGENTSVC_HOME: home });
  t.match(first[0].text, new RegExp(`^agentsvc: starting \\(home ${h}, pid \\d+\\)$`), 'the first line says it starts, where');
  inOrder(t, first, [
    /^agentsvc: starting \(home /,
    /^agentsvc: home locked; loading the service while the database opens$/,
    new RegExp(`^agentsvc: creating the embedded PostgreSQL database in ${h}/db/data \\(first start only\\)$`),
    new RegExp(`^agentsvc: starting the embedded PostgreSQL \\(its log: ${h}/logs/postgres\\.log\\)$`),
    /^agentsvc: applying \d+ database migrations$/,
    ...after,
  ]);

  const second = await start(t, { AGENTSVC_HOME: home });
  t.notOk(second.some((l) => /creating the embedded PostgreSQL/.test(l.text)), 'the database is created once');
  inOrder(t, second, [/^agentsvc: starting \(home /, /^agentsvc: home locked/, /^agentsvc: starting the embedded PostgreSQL /, /^agentsvc: database schema up to date$/, ...after]);
});

t.test('with DATABASE_URL: the server it reaches, without the credentials', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-up-steps-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const url = await freshDatabaseUrl(t);
  const u = new URL(url);
  const lines = await start(t, { AGENTSVC_HOME: home, DATABASE_URL: url });
  inOrder(t, lines, [/^agentsvc: home locked/, new RegExp(`^agentsvc: connecting to DATABASE_URL \\(${esc(`${u.host}${u.pathname}`)}\\)$`), /^agentsvc: applying \d+ database migrations$/, /^agentsvc listening on /]);
  t.notOk(lines.some((l) => /embedded PostgreSQL/.test(l.text)), 'no embedded server');
  if (u.password) t.notOk(lines.some((l) => l.text.includes(u.password)), 'the password is not printed');
});
