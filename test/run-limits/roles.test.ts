import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import type { TestApp } from '../helpers/app.js';

// docs/run-limits.md "Per role": a solution role's run_limits replace the install's ceilings for
// the runs of its sessions; a role without them, and a session without a role, keep the install's.

const SOLUTION = {
  id: 'ops',
  name: 'Ops',
  version: '1.0.0',
  roles: [
    { id: 'strict', name: 'Strict', system_prompt: 'Be brief.', tools: ['Echo'], run_limits: { max_tool_calls: 2, loop_repeats: 2 } },
    { id: 'open', name: 'Open', system_prompt: 'Be brief.', tools: ['Echo'] },
  ],
};

async function withSolution(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-plugin-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'index.mjs'), "export default { name: 'ops-solution', register() {} };\n");
  mkdirSync(join(dir, 'solutions', 'ops'), { recursive: true });
  writeFileSync(join(dir, 'solutions', 'ops', 'solution.json'), JSON.stringify(SOLUTION));
  // The install's defaults: 500 tool calls, 5 repeats.
  const built = await buildWithModel(t, { AGENTSVC_PLUGINS: join(dir, 'index.mjs') });
  built.app.service.tools.register(echoTool());
  return built;
}

type Model = Awaited<ReturnType<typeof buildWithModel>>['model'];

/** One run of a session of `role` (none: no role) while the model makes `calls` tool calls, then answers. */
async function runWith(app: TestApp, model: Model, role: string | null, calls: (i: number) => Record<string, unknown>, n: number) {
  const sid = await createSession(app, app.adminKey, role ? { solution_id: 'ops', biz_role_id: role } : {});
  let i = 0;
  model.fallback = () => (i < n ? { toolCalls: [{ name: 'Echo', args: calls(++i) }] } : { text: ['done'] });
  const { sock, seen } = await watch(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'work' });
  await untilEnd(seen, sid);
  const notices = seen.filter((e) => e.name === 'system:notice').map(({ payload: { seq: _, ...p } }) => p);
  return { sid, end: seen.at(-1)?.payload as Record<string, unknown>, notices };
}

t.test("a role's lower tool-call ceiling ends its run `limit`; the install's would not", async (t) => {
  const { app, model } = await withSolution(t);
  const other = (i: number) => ({ say: `n${i}` });
  const strict = await runWith(app, model, 'strict', other, 3);
  t.match(strict.end, { status: 'completed', finish_reason: 'limit' });
  t.same(strict.notices, [
    { session_id: strict.sid, code: 'RUN_LIMIT', message: "The run was ended: 3 tool calls, past its 2 (the role's run_limits.max_tool_calls).", limit: 'tool_calls', max: 2, value: 3 },
  ]);
  for (const role of ['open', null]) {
    const r = await runWith(app, model, role, other, 3);
    t.match(r.end, { status: 'completed', finish_reason: 'stop' }, `${role ?? 'no role'}: three calls under the install's 500`);
    t.same(r.notices, []);
  }
});

t.test("a role's loop_repeats: the same call twice ends its run `loop`; the install's 5 would not", async (t) => {
  const { app, model } = await withSolution(t);
  const same = () => ({ say: 'again' });
  const strict = await runWith(app, model, 'strict', same, 2);
  t.match(strict.end, { status: 'completed', finish_reason: 'loop' });
  t.same(strict.notices, [{ session_id: strict.sid, code: 'LOOP_DETECTED', message: 'The run was ended: Echo was called 2 times in a row with the same arguments and the same result.', tool_name: 'Echo' }]);
  const open = await runWith(app, model, 'open', same, 2);
  t.match(open.end, { status: 'completed', finish_reason: 'stop' });
});

t.test('a role with a bad run_limits skips its solution, reported', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-plugin-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'index.mjs'), "export default { name: 'bad-limits', register() {} };\n");
  mkdirSync(join(dir, 'solutions', 'ops'), { recursive: true });
  const bad = { ...SOLUTION, roles: [{ ...SOLUTION.roles[0], run_limits: { max_tool_calls: 0 } }] };
  writeFileSync(join(dir, 'solutions', 'ops', 'solution.json'), JSON.stringify(bad));
  const { app } = await buildWithModel(t, { AGENTSVC_PLUGINS: join(dir, 'index.mjs') });
  t.notOk((await (await app.api('/api/solutions')).json()).items.some((s: { id: string }) => s.id === 'ops'));
  t.match(app.service.warnings.join('\n'), /solution .*ops.* skipped: .*run_limits\.max_tool_calls/);
});
