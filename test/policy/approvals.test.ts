import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd, type Recorded, echoTool } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import type { TestApp } from '../helpers/app.js';

// docs/policy.md: `ask` is a durable pause answered through askuser_answer; several approvals of a
// turn are asked one after another; "Allow for this session" records a session rule.


const POLICY = JSON.stringify({ default: 'allow', rules: [{ tool: 'Echo', pattern: '*secret*', action: 'ask' }] });

async function connected(app: TestApp, sid: string) {
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  return { sock, seen };
}

const messages = async (app: TestApp, sid: string) => (await app.api(`/api/sessions/${sid}/messages`)).json();
const lastEnd = (seen: Recorded[]) => seen.filter((e) => e.name === 'chat:end').at(-1)?.payload;

t.test('an approval survives a restart, then Allow once runs the call', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  const sid = await createSession(app);
  let { sock, seen } = await connected(app, sid);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'the secret plan' } }] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  t.match(lastEnd(seen), { status: 'completed', finish_reason: 'tool_approval' });
  const call = (await messages(app, sid))[1].tool_calls[0];
  t.match(call, {
    status: 'awaiting_answer',
    pending_question_ref: {
      type: 'approval',
      tool_call_id: call.id,
      tool_name: 'Echo',
      arguments: { say: 'the secret plan' },
      rule: { tool: 'Echo', pattern: '*secret*', action: 'ask' },
      source: 'install',
      options: ['Allow once', 'Allow for this session', 'Deny'],
    },
  });
  t.same(runs, [], 'nothing ran before the answer');

  await app.restart();
  app.service.tools.register(echoTool(runs));
  ({ sock, seen } = await connected(app, sid));
  const bad = await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: call.id, selections: { 0: [3] } } });
  t.match(bad, { ok: false, error: { code: 'VALIDATION_ERROR' } }, 'an option out of range changes nothing');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'waiting_for_input');

  model.script({ text: ['done'] });
  const ack = await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: call.id, selections: { 0: [0] } } });
  t.same(ack, { ok: true, turn_id: null });
  await untilEnd(seen, sid);
  t.same(runs, ['the secret plan'], 'Allow once ran the call');
  t.match(lastEnd(seen), { status: 'completed', finish_reason: 'stop' });
  const msgs = await messages(app, sid);
  t.match(msgs[1], { status: 'completed', tool_calls: [{ id: call.id, status: 'done', result: 'said the secret plan', pending_question_ref: null }] });
  t.match(msgs.at(-1), { role: 'assistant', status: 'completed' });
  const audit = await (await app.api(`/api/audit?session_id=${sid}`)).json();
  t.same(audit.items.map((r: { action: string }) => r.action), ['approved', 'asked'], 'asked, then approved, newest first');
  t.match(audit.items[0], { tool_call_id: call.id, decided_by: (await (await app.api('/api/auth/me')).json()).id });
});

t.test('approvals of one turn are asked in order; Deny gives the reason; Allow for this session adds a rule', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  model.script({
    toolCalls: [
      { name: 'Echo', args: { say: 'secret one' } },
      { name: 'Echo', args: { say: 'plain' } },
      { name: 'Echo', args: { say: 'secret two' } },
    ],
  });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  t.same(runs, ['plain'], 'the call needing no approval ran');
  const [first, , second] = (await messages(app, sid))[1].tool_calls;
  const early = await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: second.id, selections: { 0: [0] } } });
  t.match(early, { ok: false, error: { code: 'NO_PENDING_QUESTION' } }, 'the second approval waits for the first');

  await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: first.id, selections: { 0: [2] }, custom: { 0: 'not today' } } });
  await untilEnd(seen, sid, 20_000, 2);
  t.match(lastEnd(seen), { finish_reason: 'tool_approval' }, 'still paused on the second approval');
  let turn = (await messages(app, sid))[1];
  t.match(turn.tool_calls[0], { status: 'error', result: 'denied by policy: Echo *secret* (install); the user denied this call: not today' });
  t.equal(turn.status, 'paused');

  model.script({ text: ['ok'] }, { toolCalls: [{ name: 'Echo', args: { say: 'secret two' } }] }, { text: ['again done'] });
  await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: second.id, selections: { 0: [1] } } });
  await untilEnd(seen, sid, 20_000, 3);
  t.match(lastEnd(seen), { finish_reason: 'stop' });
  turn = (await messages(app, sid))[1];
  t.match(turn, { status: 'completed', tool_calls: [{ status: 'error' }, { status: 'done' }, { status: 'done', result: 'said secret two' }] });
  const policy = await (await app.api(`/api/sessions/${sid}/policy`)).json();
  t.match(policy.rules.at(-1), { tool: 'Echo', pattern: '*secret*', action: 'allow', source: 'session', approved: true });

  // The same call again does not ask: the session rule answers that ask.
  await request(sock, 'chat:send', { session_id: sid, message: 'once more' });
  await untilEnd(seen, sid, 20_000, 4);
  t.match(lastEnd(seen), { finish_reason: 'stop' });
  t.same(runs, ['plain', 'secret two', 'secret two']);
  const audit = await (await app.api(`/api/audit?session_id=${sid}&action=rejected`)).json();
  t.equal(audit.total, 1);
});

t.test('unattended runs never pause: ask becomes the install unattended action', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'secret' } }] }, { text: ['gave up'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go', headless: true });
  await untilEnd(seen, sid);
  t.match(lastEnd(seen), { status: 'completed', finish_reason: 'stop' });
  t.same(runs, []);
  const call = (await messages(app, sid))[1].tool_calls[0];
  t.match(call, { status: 'error', result: /^denied by policy: Echo \*secret\* \(install\): nobody attends this run/ });
  const audit = await (await app.api(`/api/audit?session_id=${sid}`)).json();
  t.match(audit.items, [{ action: 'denied', decided_by: 'unattended' }]);
});

t.test('chat:stop leaves an approval pending; scheduled and task runs are unattended', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'secret' } }] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  const call = (await messages(app, sid))[1].tool_calls[0];
  t.match(await request(sock, 'chat:stop', { session_id: sid }), { ok: true, stopped: false, status: 'waiting_for_input' }, 'a stop ends no run and keeps the approval');
  t.match((await messages(app, sid))[1].tool_calls[0], { status: 'awaiting_answer', pending_question_ref: { type: 'approval' } });
  model.script({ text: ['fine'] });
  await request(sock, 'chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: call.id, selections: { 0: [0] } } });
  await untilEnd(seen, sid, 20_000, 2);
  t.same(runs, ['secret'], 'answered after the stop, the call ran');

  const me = (await app.service.users.findUser('admin'))!;
  for (const origin of ['scheduled', 'task'] as const) {
    const other = await createSession(app);
    model.script({ toolCalls: [{ name: 'Echo', args: { say: `secret ${origin}` } }] }, { text: ['gave up'] });
    const run = await app.service.runs.start(me.id, { session_id: other, message: 'go' }, origin);
    t.match(await run.ended, { origin, status: 'completed', finish_reason: 'stop' }, `a ${origin} run does not pause`);
    t.match((await messages(app, other))[1].tool_calls[0], { status: 'error', result: /: nobody attends this run to approve it \(unattended: deny\)$/ });
  }
  t.same(runs, ['secret']);
});

t.test('rules from users and sessions; sessions narrow and never widen; 422 names the rule', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
  const runs: string[] = [];
  app.service.tools.register(echoTool(runs));
  const bob = await app.newUser();
  const sid = await createSession(app, bob.key);
  const sock = app.socket(bob.key);
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);

  const bad = await app.api(`/api/sessions/${sid}/policy`, { method: 'PUT', key: bob.key, json: { rules: [{ tool: 'Echo', action: 'allow' }, { tool: 'Echo', action: 'maybe' }] } });
  t.equal(bad.status, 422);
  t.match(JSON.stringify(await bad.json()), /rules.*1.*action/, 'the detail names rules[1].action');
  t.same((await (await app.api(`/api/sessions/${sid}/policy`, { key: bob.key })).json()).rules.filter((r: { source: string }) => r.source === 'session'), [], 'nothing stored');
  t.equal((await app.api(`/api/admin/users/${bob.userId}/policy`, { method: 'PUT', key: bob.key, json: { rules: [] } })).status, 403, 'only admins set user rules');
  t.equal((await app.api(`/api/sessions/${sid}/policy`)).status, 404, "another user's session is 404");

  // The user's deny, set by an admin; the session's allow does not lift the install's ask.
  t.equal((await app.api(`/api/admin/users/${bob.userId}/policy`, { method: 'PUT', json: { rules: [{ tool: 'Echo', pattern: '*rm*', action: 'deny' }] } })).status, 200);
  t.equal((await app.api(`/api/sessions/${sid}/policy`, { method: 'PUT', key: bob.key, json: { rules: [{ tool: 'Echo', action: 'allow' }] } })).status, 200);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'rm it' } }, { name: 'Echo', args: { say: 'a secret' } }] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  const mine = await (await app.api(`/api/sessions/${sid}/messages`, { key: bob.key })).json();
  t.match(mine[1].tool_calls, [{ status: 'error', result: 'denied by policy: Echo *rm* (user)' }, { status: 'awaiting_answer' }]);
  t.match(lastEnd(seen), { finish_reason: 'tool_approval' });
  const eff = await (await app.api(`/api/sessions/${sid}/policy`, { key: bob.key })).json();
  t.same(
    eff.rules.map((r: { source: string; action: string }) => `${r.source}:${r.action}`),
    ['install:ask', 'user:deny', 'session:allow'],
  );

  // The audit: Bob reads his own; not another user's; an admin reads everyone's.
  const own = await (await app.api('/api/audit', { key: bob.key })).json();
  t.same(own.items.map((r: { action: string }) => r.action).sort(), ['asked', 'denied']);
  t.equal((await app.api(`/api/audit?user_id=${(await (await app.api('/api/auth/me')).json()).id}`, { key: bob.key })).status, 403);
  const all = await (await app.api(`/api/audit?user_id=${bob.userId}`)).json();
  t.equal(all.total, 2);
  t.equal((await app.api('/api/audit?limit=0')).status, 422);
  t.equal((await app.api('/api/audit?action=maybe')).status, 422);
});

t.test('audit arguments are masked as in shares', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: JSON.stringify({ rules: [{ tool: 'Echo', action: 'deny' }] }) });
  app.service.tools.register(echoTool([]));
  const sid = await createSession(app);
  t.equal((await app.api(`/api/sessions/${sid}/env`, { method: 'PUT', json: { env: { TOKEN: 'tok-very-secret-123' } } })).status, 200);
  const { sock, seen } = await connected(app, sid);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'use tok-very-secret-123' } }] }, { text: ['ok'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(seen, sid);
  const audit = await (await app.api(`/api/audit?session_id=${sid}`)).json();
  t.match(audit.items, [{ action: 'denied', arguments: '{"say":"use ****"}', rule: { tool: 'Echo', action: 'deny' }, source: 'install', decided_by: 'policy' }]);
});

t.test('WebFetch host rules hold for every redirect hop', async (t) => {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    const port = (server.address() as { port: number }).port;
    if (req.url === '/hop') res.writeHead(302, { location: `http://localhost:${port}/final` }).end();
    else res.writeHead(200, { 'content-type': 'text/plain' }).end('the final page');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_WEBFETCH_ALLOW_PRIVATE: 'true',
    AGENTSVC_POLICY: JSON.stringify({ rules: [{ tool: 'WebFetch', pattern: 'localhost', action: 'deny' }] }),
  });
  const sid = await createSession(app);
  const { sock, seen } = await connected(app, sid);
  model.script({ toolCalls: [{ name: 'WebFetch', args: { url: `http://127.0.0.1:${port}/hop`, prompt: 'read' } }] }, { text: ['blocked'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'fetch' });
  await untilEnd(seen, sid);
  const call = (await messages(app, sid))[1].tool_calls[0];
  t.match(call, { status: 'error', result: new RegExp(`redirect to http://localhost:${port}/final was not followed: denied by policy: WebFetch localhost \\(install\\)`) });
  const audit = await (await app.api(`/api/audit?session_id=${sid}`)).json();
  t.same(audit.items.map((r: { action: string; arguments: string }) => `${r.action} ${JSON.parse(r.arguments).url}`), [`denied http://localhost:${port}/final`]);
});

t.test("a solution role's policy applies to its sessions; decisions are counted in /metrics", async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app, app.adminKey, { solution_id: 'code-reviewer', biz_role_id: 'fixer' });
  const eff = await (await app.api(`/api/sessions/${sid}/policy`)).json();
  t.same(eff.rules, [
    { tool: 'Bash', pattern: 'git push*', action: 'ask', source: 'role' },
    { tool: 'Bash', pattern: 'npm publish*', action: 'deny', source: 'role' },
  ]);
  const { sock, seen } = await connected(app, sid);
  model.script({ toolCalls: [{ name: 'Bash', args: { command: 'npm publish' } }, { name: 'Bash', args: { command: 'git push' } }] });
  await request(sock, 'chat:send', { session_id: sid, message: 'release' });
  await untilEnd(seen, sid);
  t.match((await messages(app, sid))[1].tool_calls, [
    { status: 'error', result: 'denied by policy: Bash npm publish* (role)' },
    { status: 'awaiting_answer', pending_question_ref: { source: 'role' } },
  ]);
  const metrics = await (await app.api('/metrics')).text();
  t.match(metrics, /agentsvc_approvals_total\{action="denied"\} 1\n/);
  t.match(metrics, /agentsvc_approvals_total\{action="asked"\} 1\n/);
});
