import { HttpAgent } from '@ag-ui/client';
import type { BaseEvent } from '@ag-ui/core';
import { type IncomingMessage, request } from 'node:http';
import t from 'tap';
import { buildWithModel, createSession, echoTool, shape, untilEnd, watch } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The AG-UI door (docs/protocol-doors.md), driven by `@ag-ui/client`'s HttpAgent, which checks the
 * stream against the protocol's rules as it reads it: a run of the session as AG-UI events, the
 * same run any Socket.IO client of the session sees live; a question or an approval ends it as an
 * interrupt, resumed with the answer.
 */

// One service for the file (each test has a user of its own): Echo asks for approval when its
// argument holds "secret"; a failed model call is not retried.
const POLICY = JSON.stringify({ default: 'allow', rules: [{ tool: 'Echo', pattern: '*secret*', action: 'ask' }] });
const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY, AGENTSVC_MODEL_RETRIES: '0' });
const ran: string[] = [];
app.service.tools.register(echoTool(ran));

async function agentFor(key?: string) {
  key ??= (await app.newUser()).key;
  const sid = await createSession(app, key);
  const agent = new HttpAgent({ url: `${app.url}/api/ag-ui/${sid}`, headers: { authorization: `Bearer ${key}` }, threadId: sid });
  const events: BaseEvent[] = [];
  agent.subscribe({ onEvent: ({ event }) => void events.push(event) });
  return { key, sid, agent, events };
}

const say = (agent: HttpAgent, text: string) => agent.addMessage({ id: `m${agent.messages.length}`, role: 'user', content: text });
/** Event types, with a run of TEXT_MESSAGE_CONTENT counted once (deltas come as the engine batches them). */
const types = (events: BaseEvent[]) => events.map((e) => e.type as string).filter((n, i, all) => !(n === 'TEXT_MESSAGE_CONTENT' && all[i - 1] === n));

t.test('a run as AG-UI events, seen live by a socket of the session', async (t) => {
  const { key, sid, agent, events } = await agentFor();
  const { seen } = await watch(app, sid, key);
  model.script({ text: ['Let me ', 'check.'], toolCalls: [{ name: 'Echo', args: { say: 'hi' } }] }, { text: ['It ', 'said hi.'], usage: { prompt_tokens: 10, completion_tokens: 4 } });
  say(agent, 'echo hi');
  const { newMessages } = await agent.runAgent({ runId: 'run-1' });
  t.same(types(events), [
    'RUN_STARTED',
    'TEXT_MESSAGE_START',
    'TEXT_MESSAGE_CONTENT',
    'TEXT_MESSAGE_END',
    'TOOL_CALL_START',
    'TOOL_CALL_ARGS',
    'TOOL_CALL_END',
    'TOOL_CALL_RESULT',
    'TEXT_MESSAGE_START',
    'TEXT_MESSAGE_CONTENT',
    'TEXT_MESSAGE_END',
    'RUN_FINISHED',
  ]);
  t.match(events[0], { threadId: sid, runId: 'run-1' });
  await untilEnd(seen, sid);
  const assistants = seen.filter((e) => e.name === 'turn:start' && e.payload.role === 'assistant').map((e) => e.payload.turn_id);
  const call = seen.find((e) => e.payload.patch_type === 'add_tool_call')?.payload.data;
  t.match(events[1], { messageId: assistants[0], role: 'assistant' }, 'a text message is its turn');
  t.match(events.find((e) => e.type === 'TOOL_CALL_START'), { toolCallId: call.id, toolCallName: 'Echo', parentMessageId: assistants[0] });
  t.match(events.find((e) => e.type === 'TOOL_CALL_ARGS'), { delta: '{"say":"hi"}' });
  t.match(events.find((e) => e.type === 'TOOL_CALL_RESULT'), { toolCallId: call.id, content: 'said hi' });
  const usage = seen.at(-1)?.payload.usage;
  t.match(events.at(-1), { type: 'RUN_FINISHED', runId: 'run-1', outcome: { type: 'success' }, result: { status: 'completed', finish_reason: 'stop' } });
  t.same((events.at(-1) as any).usage, [{ inputTokens: usage.input_tokens, outputTokens: usage.output_tokens, totalTokens: usage.input_tokens + usage.output_tokens }], "usage is chat:end's");
  t.same(shape(seen).filter((n, i, all) => !(n === 'turn:patch:add_content' && all[i - 1] === n) && n !== 'turn:patch:usage').slice(-5), ['turn:end', 'turn:start', 'turn:patch:add_content', 'turn:end', 'chat:end'], 'the socket saw the run');
  // What the client keeps: the assistant's messages with their text and the tool call and its result.
  t.same(
    newMessages.map((m) => m.role),
    ['assistant', 'tool', 'assistant'],
  );
  t.equal(newMessages[0].content, 'Let me check.');
  t.equal(newMessages[2].content, 'It said hi.');
  const stored = await (await app.api(`/api/sessions/${sid}/messages`, { key })).json();
  t.equal(stored.length, 3, 'the session keeps the conversation: one user turn, two assistant turns');
});

t.test('an approval ends the run as an interrupt; resuming it answers the approval', async (t) => {
  ran.length = 0;
  const { key, sid, agent, events } = await agentFor();
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'the secret' } }] }, { text: ['Done.'] });
  say(agent, 'go');
  await agent.runAgent();
  const finished = events.at(-1) as BaseEvent & { outcome: { type: string; interrupts: { id: string; reason: string; toolCallId: string; metadata: any }[] } };
  t.equal(finished.type, 'RUN_FINISHED');
  t.equal(finished.outcome.type, 'interrupt');
  const [i] = finished.outcome.interrupts;
  t.match(i, { reason: 'agentsvc.approval', toolCallId: i.id, metadata: { agentsvc: { type: 'approval', tool_name: 'Echo', options: ['Allow once', 'Allow for this session', 'Deny'] } } });
  t.equal((await (await app.api(`/api/sessions/${sid}`, { key })).json()).status, 'waiting_for_input');
  t.same(ran, []);

  events.length = 0;
  await agent.runAgent({ resume: [{ interruptId: i.id, status: 'resolved', payload: { selections: { 0: [0] } } }] });
  t.same(ran, ['the secret'], 'Allow once ran the call');
  t.same(types(events), ['RUN_STARTED', 'TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
  t.match(events[1], { toolCallId: i.id, content: 'said the secret' });
  t.match(events.at(-1), { outcome: { type: 'success' } });
});

t.test('a question is an interrupt too; a cancelled approval is a Deny', async (t) => {
  ran.length = 0;
  const { agent, events } = await agentFor();
  const questions = [{ question: 'Which?', header: 'Pick', multiSelect: false, options: [{ label: 'A', description: 'a' }, { label: 'B', description: 'b' }] }];
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: { questions } }] }, { toolCalls: [{ name: 'Echo', args: { say: 'secret B' } }] }, { text: ['Fine.'] });
  say(agent, 'ask');
  await agent.runAgent();
  const q = (events.at(-1) as any).outcome.interrupts[0];
  t.match(q, { reason: 'agentsvc.question', message: 'Answer: Which?', metadata: { agentsvc: { type: 'question', questions } } });
  events.length = 0;
  await agent.runAgent({ resume: [{ interruptId: q.id, status: 'resolved', payload: { selections: { 0: [1] } } }] });
  t.match(events[1], { type: 'TOOL_CALL_RESULT', toolCallId: q.id, content: /chosen: "B"/ });
  const a = (events.at(-1) as any).outcome.interrupts[0];
  t.equal(a.reason, 'agentsvc.approval', 'the next step asks for an approval');
  events.length = 0;
  await agent.runAgent({ resume: [{ interruptId: a.id, status: 'cancelled' }] });
  t.same(ran, [], 'cancelled: denied, never ran');
  t.match(events.find((e) => e.type === 'TOOL_CALL_RESULT'), { toolCallId: a.id, content: /denied/ });
  t.match(events.at(-1), { type: 'RUN_FINISHED', outcome: { type: 'success' } });
});

t.test("refusals come before the stream: another user's session, bad input, a busy session", async (t) => {
  const mine = await agentFor();
  const other = await agentFor();
  const post = (sid: string, body: unknown, key = mine.key) => app.api(`/api/ag-ui/${sid}`, { method: 'POST', json: body, key });
  const input = (content: unknown, extra: object = {}) => ({ threadId: 't', runId: 'r', messages: [{ id: 'm', role: 'user', content }], tools: [], context: [], state: {}, ...extra });

  const theirs = await post(other.sid, input('hi'));
  t.equal(theirs.status, 404);
  t.same(await theirs.json(), { detail: 'session not found', code: 'NOT_FOUND' });
  const stranger = new HttpAgent({ url: `${app.url}/api/ag-ui/${other.sid}`, headers: { authorization: `Bearer ${mine.key}` } });
  stranger.addMessage({ id: 'x', role: 'user', content: 'hi' });
  await t.rejects(stranger.runAgent(), /404/, 'the HttpAgent run fails with the status');
  t.equal((await app.api(`/api/ag-ui/${mine.sid}`, { method: 'POST', json: input('hi'), key: null })).status, 401);

  const noRun = await post(mine.sid, { threadId: 't', messages: [] });
  t.equal(noRun.status, 422);
  t.match(await noRun.json(), { code: 'VALIDATION_ERROR', detail: [{ loc: ['body', 'runId'] }] });
  const notUser = await post(mine.sid, { threadId: 't', runId: 'r', messages: [{ id: 'a', role: 'assistant', content: 'x' }] });
  t.match(await notUser.json(), { code: 'VALIDATION_ERROR', detail: [{ loc: ['body', 'messages'], msg: /last message must be the user's/ }] });
  const parts = await post(mine.sid, input([{ type: 'image', source: { type: 'url', value: 'http://x/y.png' } }]));
  t.match(await parts.json(), { code: 'VALIDATION_ERROR', detail: [{ msg: 'the user message has no text' }] });
  const twoResumes = await post(mine.sid, input('x', { resume: [{ interruptId: 'a', status: 'resolved' }, { interruptId: 'b', status: 'resolved' }] }));
  t.equal(twoResumes.status, 422);
  const noPending = await post(mine.sid, input('x', { resume: [{ interruptId: 'tc_nope', status: 'resolved', payload: { selections: { 0: [0] } } }] }));
  t.equal(noPending.status, 409);
  t.match(await noPending.json(), { code: 'NO_PENDING_QUESTION' });
  t.same(await (await app.api(`/api/sessions/${mine.sid}/messages`, { key: mine.key })).json(), [], 'nothing stored');

  // A run under way (from a socket): the door answers 409 before any stream.
  const { sock, seen } = await watch(app, mine.sid, mine.key);
  model.script({ text: ['slow'], delayMs: 300 });
  sock.emit('chat:send', { session_id: mine.sid, message: 'first' });
  await waitFor(async () => (await (await app.api(`/api/sessions/${mine.sid}`, { key: mine.key })).json()).status === 'running', { what: 'the socket run running' });
  const busy = await post(mine.sid, input('second'));
  t.equal(busy.status, 409);
  t.match(await busy.json(), { code: 'SESSION_BUSY' });
  await untilEnd(seen, mine.sid);
});

t.test('a failed run ends in RUN_ERROR; a stream closed early stops the run', async (t) => {
  const { key, sid, agent, events } = await agentFor();
  model.script({ status: 400 });
  say(agent, 'fail');
  await agent.runAgent().catch(() => {});
  const last = events.at(-1) as BaseEvent & { message: string; code: string };
  t.equal(last.type, 'RUN_ERROR');
  t.ok(last.code && last.message, `code ${last.code}: ${last.message}`);
  t.equal((await (await app.api(`/api/sessions/${sid}`, { key })).json()).status, 'failed');

  model.script({ hang: true });
  // node:http, not fetch: the request is dropped by destroying its own connection.
  const body = JSON.stringify({ threadId: sid, runId: 'r2', messages: [{ id: 'm', role: 'user', content: 'hang' }] });
  const req = request(`${app.url}/api/ag-ui/${sid}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
  const res = await new Promise<IncomingMessage>((resolve) => req.on('response', resolve).end(body));
  t.equal(res.headers['content-type'], 'text/event-stream');
  const first = await new Promise<string>((resolve) => res.once('data', (b: Buffer) => resolve(b.toString())));
  t.match(first, /"type":"RUN_STARTED"/);
  req.destroy();
  await waitFor(async () => (await (await app.api(`/api/sessions/${sid}`, { key })).json()).status === 'interrupted', { what: 'the run stopped' });
});
