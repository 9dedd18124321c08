import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { unconfined } from '../helpers/confined.js';
import { waitFor } from '../helpers/wait.js';
import { chatAs, envChecks } from '../plugins/helpers.js';

// The README's MCP example exactly as printed, in the default computer mode (local runner, no
// network in the computer): the service fetches the package on the host (docs/mcp-servers.md).
// It needs the npm registry: when that cannot be reached the test is skipped with the reason, also
// with CI=true (CI does not promise network; test/mcp/npx.test.ts covers the same path offline
// with a local registry). When the registry answers, every assertion holds, CI or not.
const skip = await unconfined(t, 'the README\'s MCP example');

const tree = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

t.test('the README example as printed: npx -y @modelcontextprotocol/server-everything stdio', { skip }, async (t) => {
  const url = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim();
  const reach = await fetch(new URL('@modelcontextprotocol%2fserver-everything', url.endsWith('/') ? url : `${url}/`), { signal: AbortSignal.timeout(5000) }).then(
    (r) => (r.ok ? null : `HTTP ${r.status}`),
    (e: Error) => e.message,
  );
  if (reach) {
    t.comment(`skipped: the npm registry ${url} is unreachable from this machine (${reach})`);
    return;
  }
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_RUNNER: 'local',
    AGENTSVC_MCP_SERVERS: JSON.stringify({ everything: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'] } }),
  });
  const fetched = await waitFor(async () => {
    const c = (await envChecks(app))['mcp:everything'];
    return c.status !== 'warn' ? c : null;
  }, { timeoutMs: 120_000, everyMs: 500, what: 'the host fetch of server-everything' });
  t.equal(fetched.status, 'ok', `fetched on the host: ${fetched.detail}`);
  const u = await app.newUser();
  const root = join(app.config.workspaces, u.userId);
  const sid = await createSession(app, u.key);
  const t0 = Date.now();
  const r = await chatAs(app, u.key, model, sid, 'echo', { toolCalls: [{ name: 'mcp__everything__echo', args: { message: 'as printed' } }] }, { text: ['ok'] });
  t.comment(`first run, server-everything started in the computer: ${Date.now() - t0} ms`);
  t.equal(r.results[0].status, 'done', `echo answered: ${r.results[0].result}`);
  t.match(r.results[0].result, /as printed/);
  t.same(tree(root).filter((p) => /npm|_logs|\.log$/.test(p)), [], 'no npm files in the workspace');
  t.match((await envChecks(app))['mcp:everything'], { status: 'ok', detail: /^1 of 1 users' processes ready \(stdio, in users' computers, \d+ tools\)/ });
});
