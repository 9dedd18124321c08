import type { Test } from 'tap';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildWithModel, createSession } from '../helpers/chat.js';
import type { TestApp } from '../helpers/app.js';
import { FIXTURE_PACKAGE } from '../helpers/npm-registry.js';
import { waitFor } from '../helpers/wait.js';
import { chatAs, envChecks, offered } from '../plugins/helpers.js';

/**
 * The npx scenario of docs/mcp-servers.md, on one runner (test/mcp/npx.test.ts: local,
 * test/mcp/docker-npx.test.ts: docker): three servers of the fixture package in one install, the
 * host fetching it from a local registry; one works in the user's computer (which never reaches
 * the registry), one fails at start with its stderr in the checks, one hangs and is cut at its
 * start timeout once; npm leaves nothing in the workspace.
 */
export interface Where {
  /** The service's environment for this runner (AGENTSVC_RUNNER and what it needs). */
  env: Record<string, string>;
  /** The hanging server's start timeout: the first run waits this long, once. */
  startMs: number;
  /** The user's workspace as the server's process sees it (its cwd). */
  inside(app: TestApp, userId: string): string;
  /** Called with each new user (e.g. to remove their container at teardown). */
  onUser?(userId: string): void;
}

/** The host's npm (the service's) asks this registry while the test runs. */
function useRegistry(t: Test, url: string) {
  const before = process.env.npm_config_registry;
  process.env.npm_config_registry = url;
  t.teardown(() => {
    if (before === undefined) delete process.env.npm_config_registry;
    else process.env.npm_config_registry = before;
  });
}

/** Every entry under `dir` (relative paths), for what npm may have left in a workspace. */
const tree = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

const npx = (...args: string[]) => ({ command: 'npx', args: ['-y', FIXTURE_PACKAGE, ...args] });

export async function npxScenario(t: Test, registry: { url: string; requests: string[] }, where: Where): Promise<void> {
  useRegistry(t, registry.url);
  const START = where.startMs;
  // One install, three servers from the same package: one host fetch serves them all.
  const servers = { fx: npx(), bad: npx('--fail'), stuck: { ...npx('--hang'), start_timeout_ms: START } };
  const { app, model } = await buildWithModel(t, { ...where.env, AGENTSVC_MCP_SERVERS: JSON.stringify(servers) });
  const fetched = await waitFor(async () => {
    const c = (await envChecks(app))['mcp:fx'];
    return c.status !== 'warn' ? c : null;
  }, { timeoutMs: 45_000, everyMs: 200, what: 'the host fetch' });
  t.match(fetched, { status: 'ok', detail: `(npm package ${FIXTURE_PACKAGE} fetched on the host)` }, 'the check says the package is on the host');
  t.ok(registry.requests.some((r) => r.endsWith('.tgz')), `the host fetched the document and the tarball (${registry.requests.join(', ')})`);
  const asked = registry.requests.length;

  const u = await app.newUser();
  where.onUser?.(u.userId);
  const root = join(app.config.workspaces, u.userId);
  mkdirSync(root, { recursive: true });
  const before = tree(root);
  const timed = async (...steps: Parameters<typeof model.script>) => {
    const t0 = Date.now();
    const r = await chatAs(app, u.key, model, await createSession(app, u.key), 'go', ...steps);
    t.equal(r.end.status, 'completed', 'the run completes');
    return { ...r, ms: Date.now() - t0, request: model.requests.length - steps.length };
  };

  const first = await timed({ toolCalls: [{ name: 'mcp__fx__hello', args: { name: 'ann' } }] }, { text: ['ok'] });
  t.ok(first.ms >= START - 100, `the first run waited for the starts (${first.ms} ms)`);
  t.ok(first.ms < START + 3000, `at most about one start timeout (${first.ms} ms, start timeout ${START} ms)`);
  const names = offered(model, first.request);
  t.ok(names.includes('mcp__fx__hello'), 'the working server\'s tool is offered in the first run');
  t.notOk(names.some((n) => n.startsWith('mcp__bad') || n.startsWith('mcp__stuck')), 'the failing ones\' are not');
  t.equal(first.results[0].status, 'done', `the call answered: ${first.results[0].result}`);
  t.equal(first.results[0].result, `hello ann from ${where.inside(app, u.userId)} uid 1000`, 'served by the process in the user\'s computer');
  t.equal(registry.requests.length, asked, 'the computer never reached the registry');
  const system = String(model.requests[first.request].messages[0].content);
  t.match(system, /MCP server bad .*did not start.*FIXTURE_TOKEN is not set/, 'the run is told why the failing one is missing, with its stderr');
  const added = tree(root).filter((p) => !before.includes(p));
  t.same(added.filter((p) => /npm|_logs|\.log$|_npx|_cacache/.test(p)), [], `npm left nothing in the workspace (new entries: ${added.join(', ')})`);

  const checks = await envChecks(app);
  t.match(checks['mcp:fx'], { status: 'ok', detail: /^1 of 1 users' processes ready \(stdio, in users' computers, 1 tools\)/ });
  const stderr = /FIXTURE_TOKEN is not set, cannot start/;
  t.match(checks['mcp:bad'], { status: 'fail', detail: stderr }, 'a server failing at start: the admin check fails with its stderr');
  t.match((await envChecks(app, u.key))['mcp:bad'], { status: 'fail', detail: stderr }, 'and the user\'s own check');
  // The server's own clock starts once its computer is there (on Docker: the container made for
  // the user's first command), a moment after the run's: its check may still say starting then.
  const stuck = await waitFor(async () => {
    const c = (await envChecks(app))['mcp:stuck'];
    return c.status !== 'warn' ? c : null;
  }, { timeoutMs: START, everyMs: 200, what: 'the hanging server\'s start timeout' });
  t.match(stuck, { status: 'fail', detail: new RegExp(`did not answer within ${START} ms.*stderr: fixture: waiting forever`) }, 'a hanging one: fails with why and its stderr');

  for (const n of [2, 3]) {
    const again = await timed({ text: ['ok'] });
    t.ok(again.ms < START - 1000, `run ${n} did not wait for the failed servers again (${again.ms} ms)`);
  }
  // Restarted with backoff in the background (1 s, 2 s, ...): a start that fails again keeps the check failing.
  const bad = app.service.firstParty.mcp().find((c) => c.name === 'bad')!;
  await waitFor(() => bad.restarts >= 1 && bad.state === 'failed', { timeoutMs: 20_000, everyMs: 100, what: 'a failed restart' });
  t.match((await envChecks(app))['mcp:bad'], { status: 'fail', detail: stderr }, 'after a failed restart the check still fails');
}
