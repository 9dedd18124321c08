import t from 'tap';
import { buildWithModel, createSession, echoTool, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import type { TestApp } from '../helpers/app.js';

// docs/inbox.md: GET /api/inbox lists what waits on the caller across their sessions, oldest
// first, only theirs; an approval whose rule has timeout_seconds is decided by a durable job.

const ASK = { tool: 'Echo', pattern: '*secret*', action: 'ask' };
const QUESTION = { questions: [{ question: 'Which branch?', options: [{ label: 'main' }, { label: 'dev' }] }] };

const inbox = async (app: TestApp, key?: string, q = '') => (await app.api(`/api/inbox${q}`, { key })).json();
const messages = async (app: TestApp, sid: string, key?: string) => (await app.api(`/api/sessions/${sid}/messages`, { key })).json();

t.test('the inbox lists the caller\'s questions and approvals, oldest first, pages, and answers in place', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: JSON.stringify({ default: 'allow', rules: [ASK] }) });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  const bob = await app.newUser('bob');
  t.same(await inbox(app), { items: [], total: 0 }, 'empty at first');

  // Admin: an approval, then a question in another session. Bob: a question of his own.
  const s1 = await createSession(app, app.adminKey, { intent: 'Deploy the site' });
  let w = await watch(app, s1);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'the secret plan' } }] });
  await request(w.sock, 'chat:send', { session_id: s1, message: 'go' });
  await untilEnd(w.seen, s1);
  const s2 = await createSession(app, app.adminKey, { intent: 'Pick a branch' });
  w = await watch(app, s2);
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: QUESTION }] });
  await request(w.sock, 'chat:send', { session_id: s2, message: 'go' });
  await untilEnd(w.seen, s2);
  const s3 = await createSession(app, bob.key, { intent: 'Bob asks' });
  const wb = await watch(app, s3, bob.key);
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: QUESTION }] });
  await request(wb.sock, 'chat:send', { session_id: s3, message: 'go' });
  await untilEnd(wb.seen, s3);

  const mine = await inbox(app);
  t.equal(mine.total, 2);
  t.match(mine.items, [
    { session_id: s1, session_intent: 'Deploy the site', kind: 'approval', tool_name: 'Echo', arguments: { say: 'the secret plan' }, rule: ASK, source: 'install', options: ['Allow once', 'Allow for this session', 'Deny'], timeout_at: null },
    { session_id: s2, session_intent: 'Pick a branch', kind: 'question', tool_name: 'AskUserQuestion', questions: QUESTION.questions },
  ]);
  t.ok(Date.parse(mine.items[0].asked_at) <= Date.parse(mine.items[1].asked_at), 'oldest first');
  const bobs = await inbox(app, bob.key);
  t.equal(bobs.total, 1, 'bob sees only his own');
  t.match(bobs.items, [{ session_id: s3, kind: 'question' }]);
  t.same((await inbox(app, undefined, '?limit=1&offset=1')).items.map((i: { session_id: string }) => i.session_id), [s2], 'paging');
  t.equal((await app.api('/api/inbox?limit=0')).status, 422);

  // Bob cannot answer the admin's approval: the session is not his (404, nothing changes).
  const approval = mine.items[0];
  const foreign = await app.api(`/api/inbox/${approval.tool_call_id}/answer`, { method: 'POST', key: bob.key, json: { session_id: s1, selections: { 0: [0] } } });
  t.equal(foreign.status, 404);
  t.same(ran, []);

  model.script({ text: ['done'] });
  const ok = await app.api(`/api/inbox/${approval.tool_call_id}/answer`, { method: 'POST', json: { session_id: s1, selections: { 0: [0] } } });
  t.equal(ok.status, 202);
  await waitFor(async () => (await inbox(app)).total === 1, { what: 'the answered approval left the inbox' });
  await waitFor(() => ran.length === 1, { what: 'the allowed call ran' });
  t.same(ran, ['the secret plan']);
});

t.test('an approval timeout set before a restart is decided after it, recorded as decided_by timeout', async (t) => {
  const rule = { ...ASK, timeout_seconds: 3, on_timeout: 'allow' };
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: JSON.stringify({ default: 'allow', rules: [rule] }), AGENTSVC_SCHEDULER_POLL_MS: '200' });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  const sid = await createSession(app);
  const w = await watch(app, sid);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'the secret plan' } }] });
  await request(w.sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(w.seen, sid);
  const [item] = (await inbox(app)).items;
  t.match(item, { kind: 'approval', rule: { timeout_seconds: 3, on_timeout: 'allow' }, on_timeout: 'allow' });
  t.ok(Math.abs(Date.parse(item.timeout_at) - Date.parse(item.asked_at) - 3000) < 1000, 'the deadline is 3 s after it was asked');

  await app.restart();
  t.equal((await messages(app, sid))[1].tool_calls[0].status, 'awaiting_answer', 'still waiting when the first service stopped');
  app.service.tools.register(echoTool(ran));
  model.script({ text: ['went on'] });
  const audit = await waitFor(
    async () => {
      const a = await (await app.api(`/api/audit?session_id=${sid}&action=approved`)).json();
      return a.total ? a : null;
    },
    { timeoutMs: 20_000, what: 'the timeout decided the approval' },
  );
  t.match(audit.items[0], { tool_call_id: item.tool_call_id, decided_by: 'timeout' });
  await waitFor(async () => (await (await app.api(`/api/sessions/${sid}`)).json()).status === 'completed', { what: 'the run went on and completed' });
  t.same(ran, ['the secret plan'], 'on_timeout allow ran the call');
  t.same(await inbox(app), { items: [], total: 0 });
});

t.test('on_timeout deny gives the call an error result and the run goes on', async (t) => {
  const rule = { ...ASK, timeout_seconds: 1 };
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: JSON.stringify({ default: 'allow', rules: [rule] }), AGENTSVC_SCHEDULER_POLL_MS: '200' });
  const ran: string[] = [];
  app.service.tools.register(echoTool(ran));
  const sid = await createSession(app);
  const w = await watch(app, sid);
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'secret' } }] }, { text: ['understood'] });
  await request(w.sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(w.seen, sid);
  await untilEnd(w.seen, sid, 20_000, 2);
  t.match(w.seen.filter((e) => e.name === 'chat:end').at(-1)?.payload, { status: 'completed', finish_reason: 'stop' });
  const call = (await messages(app, sid))[1].tool_calls[0];
  t.match(call, { status: 'error', result: 'denied by policy: Echo *secret* (install); the user denied this call: no answer within 1 s (on_timeout: deny)' });
  t.same(ran, []);
  const audit = await (await app.api(`/api/audit?session_id=${sid}&action=rejected`)).json();
  t.match(audit.items, [{ decided_by: 'timeout' }]);
  t.equal((await app.api('/api/sessions/' + sid + '/policy', { method: 'PUT', json: { rules: [{ tool: 'Echo', action: 'allow', timeout_seconds: 5 }] } })).status, 422, 'timeout_seconds only on ask rules');
});
