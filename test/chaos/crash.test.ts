import t from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl } from '../helpers/db.js';
import { kill } from '../helpers/cli.js';
import { transcriptProblems, type Api } from '../helpers/chaos.js';
import { waitFor } from '../helpers/wait.js';
import { alive } from '../appliance/cli-helpers.js';
import { boot, type Running, withModel as withRouter } from '../helpers/nodes.js';

/**
 * SIGKILL of a real `agentsvc up` in the middle of 20 chats (tools running, streams, a pending
 * question, sub-agents), then a restart: nothing stays running or streaming, every tool call has one
 * result, every turn that had ended is still stored, and the question can still be answered.
 * Second variant: embedded PostgreSQL killed together with `up`, restarted at once.
 */

const withModel = (t: { teardown(fn: () => unknown): void }) => withRouter(t, router).then(({ home, env }) => ({ home, env: { ...env, AGENTSVC_HOME: home } }));

const Q = { questions: [{ question: 'Go on?', options: [{ label: 'yes' }, { label: 'no' }] }] };

/** Routes on the session's first user message: bash-*, slow-*, ask, agent, done-*. */
function router(body: any) {
  const sys = body.messages[0].content as string;
  const last = body.messages.at(-1);
  if (sys.startsWith('You are a sub-agent')) return { text: Array.from({ length: 300 }, (_, i) => `sub${i} `), delayMs: 100 };
  const first = body.messages.find((m: any) => m.role === 'user').content as string;
  if (last.role === 'tool') return { text: ['finished ', first] };
  if (first.startsWith('bash')) return { text: ['sleeping'], toolCalls: [{ name: 'Bash', args: { command: 'sleep 30' } }] };
  if (first.startsWith('slow')) return { text: Array.from({ length: 600 }, (_, i) => `w${i} `), delayMs: 50 };
  if (first === 'ask') return { toolCalls: [{ name: 'AskUserQuestion', args: Q }] };
  if (first === 'agent') return { toolCalls: [{ name: 'Agent', args: { description: 'a', prompt: 'alpha' } }, { name: 'Agent', args: { description: 'b', prompt: 'beta' } }] };
  return { text: ['quick ', 'answer'] };
}

async function noneRunning(api: Api, sids: string[], ms: number): Promise<{ left: string[]; waited: number }> {
  const t0 = Date.now();
  let left = sids;
  const settled = async () => {
    const st = await Promise.all(left.map(async (sid) => [sid, (await (await api(`/api/sessions/${sid}`)).json()).status] as const));
    left = st.filter(([, s]) => s === 'running').map(([sid]) => sid);
    return left.length === 0;
  };
  await waitFor(settled, { timeoutMs: ms, everyMs: 500, what: 'no session running' }).catch(() => {}); // `left` says which
  return { left, waited: Date.now() - t0 };
}

/** How many processes on this machine run exactly `sleep <arg>` (the sandboxes' too: /proc shows them). */
function sleepers(arg: string): number {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8') === `sleep\0${arg}\0`) n++;
    } catch {} // gone meanwhile
  }
  return n;
}

t.test('SIGKILL of up (external PostgreSQL) mid-run, restart: clean state, question still answerable', async (t) => {
  const { env: base } = await withModel(t);
  const env = { ...base, DATABASE_URL: await freshDatabaseUrl(t) };
  const first = await boot(t, env);
  const messages = [...['bash-1', 'bash-2', 'bash-3', 'bash-4', 'bash-5', 'bash-6'], ...Array.from({ length: 10 }, (_, i) => `slow-${i}`), 'ask', 'agent', 'done-1', 'done-2'];
  const sock = await first.socket();
  const seen = new Map<string, { name: string; payload: any }[]>();
  sock.onAny((name, payload) => seen.get(payload?.session_id)?.push({ name, payload }));
  const sids: string[] = [];
  for (const message of messages) {
    const sid = (await (await first.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;
    seen.set(sid, []);
    sids.push(sid);
    await sock.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
    const ack = await sock.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message });
    t.equal(ack.ok, true, `chat:send ${message}`);
  }
  const of = (m: string) => seen.get(sids[messages.indexOf(m)])!;
  const ready = () =>
    messages.every((m) => {
      const ev = of(m);
      if (m.startsWith('bash')) return ev.some((e) => e.payload.patch_type === 'add_tool_call');
      if (m.startsWith('slow')) return ev.filter((e) => e.payload.patch_type === 'add_content').length >= 5;
      if (m === 'agent') return ev.filter((e) => e.name === 'turn:start' && e.payload.parent_fork_tool_call_id).length >= 2;
      return ev.some((e) => e.name === 'chat:end');
    });
  await waitFor(() => ready(), { timeoutMs: 30_000, everyMs: 50, what: 'all 20 chats in their state' });
  const bashChats = messages.filter((m) => m.startsWith('bash')).length;
  await waitFor(() => sleepers('30') >= bashChats, { timeoutMs: 10_000, what: 'the Bash commands running' });
  const ended = new Map(sids.map((sid) => [sid, seen.get(sid)!.filter((e) => e.name === 'turn:end').map((e) => ({ turn_id: e.payload.turn_id, status: e.payload.status }))]));
  const question = of('ask').find((e) => e.payload.patch_type === 'add_tool_call')!.payload.data;

  await kill(first.up.child, 'SIGKILL');
  const second = await boot(t, env);
  t.comment(`restart to listening: ${second.up.startMs} ms`);
  const { left, waited } = await noneRunning(second.api, sids, 60_000);
  t.comment(`sessions left running after the crash were closed ${waited} ms after the restart`);
  t.same(left, [], 'no session running (docs/sessions-and-runs.md; within 60 s, docs/scale-out.md)');

  const problems: string[] = [];
  const lost: string[] = [];
  for (const [i, sid] of sids.entries()) {
    const ask = messages[i] === 'ask';
    problems.push(...(await transcriptProblems(second.api, sid, { status: ask ? 'waiting_for_input' : ['interrupted', 'completed'], allowAwaiting: ask })));
    const stored: any[] = await (await second.api(`/api/sessions/${sid}/messages`)).json();
    for (const e of ended.get(sid)!) {
      const s = stored.find((m) => m.turn_id === e.turn_id);
      if (!s || s.status !== e.status) lost.push(`${messages[i]}: turn ${e.turn_id} ended ${e.status}, stored ${s?.status ?? 'missing'}`);
    }
  }
  t.comment(`turns that had ended before the kill: ${[...ended.values()].flat().length}`);
  t.same(problems.slice(0, 10), [], `no turn streaming, every tool call with one result (${problems.length} problems)`);
  t.same(lost.slice(0, 10), [], 'every turn that had ended is still stored as it ended');

  const s2 = await second.socket();
  const askSid = sids[messages.indexOf('ask')];
  const after: any[] = [];
  s2.onAny((name, payload) => payload?.session_id === askSid && after.push({ name, payload }));
  await s2.timeout(10_000).emitWithAck('session:subscribe', { session_id: askSid });
  const ack = await s2.timeout(10_000).emitWithAck('chat:send', { session_id: askSid, message: '', askuser_answer: { tool_call_id: question.id, selections: { 0: [0] } } });
  t.same(ack, { ok: true, turn_id: null }, 'the question is still answerable');
  await waitFor(() => after.some((e) => e.name === 'chat:end'), { timeoutMs: 15_000, everyMs: 50, what: 'the answered run' }).catch((e) => t.fail(e.message));
  t.match(after.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'stop' } }, 'and the run completes');
});

t.test('SIGKILL of up and its embedded PostgreSQL, restart at once: it comes back', async (t) => {
  const { home, env } = await withModel(t);
  // Whatever happens, no embedded PostgreSQL of this test outlives it.
  t.teardown(() => {
    try {
      process.kill(-Number(readFileSync(join(home, 'db', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGKILL');
    } catch {}
  });
  const first = await boot(t, env);
  t.comment(`first start (initdb) to listening: ${first.up.startMs} ms`);
  const sock = await first.socket();
  const sid = (await (await first.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;
  let patches = 0;
  sock.on('turn:patch', () => patches++);
  await sock.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
  t.equal((await sock.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'slow-x' })).ok, true);
  await waitFor(() => patches >= 5, { timeoutMs: 20_000, everyMs: 50, what: 'the run streaming' });

  // postmaster.pid line 1 is the server's pid; it leads its own process group (docs/architecture.md: own group).
  const pid = Number(readFileSync(join(home, 'db', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  // Both at once, database first (its processes become zombies of `up` until `up` dies too), and the
  // restart at once: a postmaster.pid naming a process that is not yet reaped must not fool the start.
  const upExit = kill(first.up.child, 'SIGKILL');
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    process.kill(pid, 'SIGKILL');
  }
  first.up.child.kill('SIGKILL');
  await upExit;
  let second: Running;
  try {
    second = await boot(t, env);
  } catch (e) {
    t.fail(`restart after the crash failed: ${(e as Error).message}`);
    return;
  }
  t.comment(`restart after SIGKILL of up + postgres, to listening: ${second.up.startMs} ms`);
  t.equal((await second.api('/api/health')).status, 200, 'health green');
  t.equal((await second.api(`/api/sessions/${sid}`)).status, 200, 'data survived');
  const { left, waited } = await noneRunning(second.api, [sid], 60_000);
  t.comment(`the killed run was closed ${waited} ms after the restart`);
  t.same(left, [], 'no session running');
  t.same(await transcriptProblems(second.api, sid, { status: ['interrupted', 'completed'] }), [], 'transcript valid');
  await kill(second.up.child, 'SIGTERM');
});

t.test('embedded PostgreSQL killed, its pid reused by another process: the restart is not fooled', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-crash-pid-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const pidFile = join(home, 'db', 'data', 'postmaster.pid');
  t.teardown(() => {
    try {
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      if (pid !== process.pid) process.kill(-pid, 'SIGKILL');
    } catch {}
  });
  const env = { AGENTSVC_HOME: home };
  const first = await boot(t, env);
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  await kill(first.up.child, 'SIGKILL');
  process.kill(-pid, 'SIGKILL');
  await waitFor(() => !alive(pid), { timeoutMs: 5000, what: 'the killed PostgreSQL gone' });

  // After a crash (or a container restart) the stale postmaster.pid may name a live process that is
  // not PostgreSQL: pids are reused. Here it names this test process.
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  lines[0] = String(process.pid);
  writeFileSync(pidFile, lines.join('\n'));
  try {
    const second = await boot(t, env);
    t.comment(`restart with a reused pid in postmaster.pid, to listening: ${second.up.startMs} ms`);
    t.equal((await second.api('/api/health')).status, 200, 'it comes back');
    await kill(second.up.child, 'SIGTERM');
  } catch (e) {
    t.fail(`restart failed: ${(e as Error).message}`);
  }
});
