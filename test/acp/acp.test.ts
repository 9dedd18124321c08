import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { PassThrough, Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import t from 'tap';
import { buildWithModel, echoTool } from '../helpers/chat.js';
import { BIN, cleanEnv, kill } from '../helpers/cli.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `agentsvc acp` (issue 46) driven by the ACP SDK's own client side, as an editor drives it: the
 * built CLI is spawned with the service's URL and key, and speaks JSON-RPC on its stdio. Covered:
 * initialize, a prompt streaming text, a tool call and the plan, cancel, an approval and a
 * question answered through session/request_permission, session/load replaying the history, and
 * unknown sessions. Every line the agent writes to stdout must be a JSON-RPC frame.
 */

type T = { teardown(fn: () => unknown): void };

interface Editor {
  agent: acp.ClientContext;
  updates: acp.SessionNotification[];
  /** When the first agent_message_chunk arrived (performance.now()), for the time to first text. */
  firstText?: number;
  permissions: acp.RequestPermissionRequest[];
  /** How the editor answers a permission request (default: the first option). */
  answer: (req: acp.RequestPermissionRequest) => acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>;
  /** Every line the agent wrote to stdout, parsed. */
  frames(): { jsonrpc?: string; id?: unknown; method?: string; result?: unknown; error?: unknown }[];
  stderr(): string;
  /** Close the agent's stdin, as an editor does; resolves with its exit code. */
  end(): Promise<number | null>;
}

const { app, model } = await buildWithModel(t);
const ran: string[] = [];
app.service.tools.register(echoTool(ran));

async function editor(t: T, env: Record<string, string> = { AGENTSVC_URL: app.url, AGENTSVC_KEY: app.adminKey }): Promise<Editor> {
  const child = spawn(process.execPath, [BIN, 'acp'], { env: { ...cleanEnv(), AGENTSVC_HOME: app.home, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let raw = '';
  let err = '';
  // The SDK reads a copy of stdout; the test keeps the raw text to check that it is frames only.
  const out = new PassThrough();
  child.stdout.on('data', (c) => {
    raw += c;
    out.write(c);
  });
  child.stdout.on('end', () => out.end());
  child.stderr.on('data', (c) => (err += c));
  const e: Editor = {
    agent: undefined as unknown as acp.ClientContext,
    updates: [],
    permissions: [],
    answer: (req) => ({ outcome: { outcome: 'selected', optionId: req.options[0].optionId } }),
    frames: () =>
      raw
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    stderr: () => err,
    end: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.stdin.end();
      }),
  };
  const conn = acp
    .client({ name: 'test-editor' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      if (params.update.sessionUpdate === 'agent_message_chunk') e.firstText ??= performance.now();
      e.updates.push(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      e.permissions.push(params);
      return e.answer(params);
    })
    .connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(out) as ReadableStream<Uint8Array>));
  t.teardown(async () => {
    conn.close();
    await kill(child, 'SIGKILL');
  });
  e.agent = conn.agent;
  return e;
}

const init = (e: Editor) => e.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
const newSession = async (e: Editor) => (await e.agent.request(acp.methods.agent.session.new, { cwd: '/tmp', mcpServers: [] })).sessionId;
const prompt = (e: Editor, sessionId: string, text: string) => e.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
const of = (e: Editor, kind: string) => e.updates.map((n) => n.update).filter((u) => u.sessionUpdate === kind) as (acp.SessionUpdate & Record<string, any>)[];
const texts = (e: Editor, kind: string) =>
  of(e, kind)
    .map((u) => u.content.text)
    .join('');
const rpcError = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error('the request succeeded');
};

let firstSession = '';
// One editor process for most tests (each spawn costs a Node start); each test has its own session.
const shared = await editor(t);
const hello = await init(shared);

/** The shared editor with what earlier tests recorded dropped. */
function fresh(): Editor {
  shared.updates.length = 0;
  shared.firstText = undefined;
  shared.permissions.length = 0;
  shared.answer = (req) => ({ outcome: { outcome: 'selected', optionId: req.options[0].optionId } });
  return shared;
}

t.test('initialize, then a prompt: text, a tool call and the plan stream as session/update; stop reason end_turn', async (t) => {
  const e = fresh();
  t.equal(hello.protocolVersion, acp.PROTOCOL_VERSION);
  t.same(hello.agentCapabilities, { loadSession: true, promptCapabilities: { image: true, audio: false, embeddedContext: true }, mcpCapabilities: { http: false, sse: false } });
  t.equal(hello.agentInfo?.name, 'agentsvc');

  const sid = await newSession(e);
  firstSession = sid;
  t.equal((await app.api(`/api/sessions/${sid}`)).status, 200, 'session/new made an agentsvc session');

  model.script(
    { text: ['Let me ', 'check.'], toolCalls: [{ name: 'TaskCreate', args: { subject: 'Say hi', description: 'greet' } }, { name: 'Echo', args: { say: 'hi' } }] },
    { text: ['Done: ', 'said hi.'] },
  );
  // A Socket.IO client watching the same session, for the time to first text beside it.
  const sock = app.socket();
  if (!sock.connected) await next(sock, 'connect');
  let socketFirst: number | undefined;
  sock.on('turn:patch', (p: { patch_type: string }) => {
    if (p.patch_type === 'add_content') socketFirst ??= performance.now();
  });
  t.equal((await request(sock, 'session:subscribe', { session_id: sid })).ok, true);
  const t0 = performance.now();
  const res = await prompt(e, sid, 'say hi please');
  t.same(res, { stopReason: 'end_turn' });
  t.type(e.firstText, 'number', 'the ACP client saw the text');
  t.type(socketFirst, 'number', 'the Socket.IO client saw the text');
  t.comment(`time to first text from the prompt: ACP ${Math.round(e.firstText! - t0)} ms, Socket.IO client ${Math.round(socketFirst! - t0)} ms (the same run)`);
  await waitFor(() => texts(e, 'agent_message_chunk') === 'Let me check.Done: said hi.', { what: 'the answer as message chunks' });

  const calls = of(e, 'tool_call');
  t.same(
    calls.map((c) => [c.title, c.kind, c.status, c.rawInput]),
    [
      ['TaskCreate: Say hi', 'think', 'in_progress', { subject: 'Say hi', description: 'greet' }],
      ['Echo: hi', 'other', 'in_progress', { say: 'hi' }],
    ],
  );
  const echo = calls[1].toolCallId;
  const done = of(e, 'tool_call_update').find((u) => u.toolCallId === echo);
  t.same(done, { sessionUpdate: 'tool_call_update', toolCallId: echo, status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'said hi' } }], rawOutput: 'said hi' });
  t.same(of(e, 'plan').at(-1)?.entries, [{ content: 'Say hi', priority: 'medium', status: 'pending' }], 'the task list as the plan');
  t.same(of(e, 'session_info_update').map((u) => u.title), ['say hi please'], 'the first prompt titles the session');
  t.same(ran, ['hi']);

  const stored = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(stored[0].blocks[0].content, 'say hi please', 'the prompt is the user turn, stored once');
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).intent, 'say hi please');

  // Nothing but JSON-RPC frames on stdout; the agent's notes are on stderr.
  t.ok(e.frames().every((f) => f.jsonrpc === '2.0'), 'stdout holds protocol frames only');
  t.match(e.stderr(), /agentsvc acp: serving ACP on stdio/);
});

t.test('session/cancel stops the run: the prompt answers cancelled and the session is interrupted', async (t) => {
  const e = fresh();
  const sid = await newSession(e);
  const before = model.requests.length;
  model.script({ hang: true });
  const pending = prompt(e, sid, 'take your time');
  await waitFor(() => model.requests.length > before, { what: 'the model to be asked' });
  const t0 = Date.now();
  await e.agent.notify(acp.methods.agent.session.cancel, { sessionId: sid });
  t.same(await pending, { stopReason: 'cancelled' });
  t.ok(Date.now() - t0 < 5000, `answered within 5 s (${Date.now() - t0} ms)`);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'interrupted');

  // The session takes the next prompt.
  model.script({ text: ['back'] });
  t.same(await prompt(e, sid, 'again'), { stopReason: 'end_turn' });
});

t.test('an approval is a permission request: Allow once runs the call, Deny does not', async (t) => {
  const e = fresh();
  const sid = await newSession(e);
  const put = await app.api(`/api/sessions/${sid}/policy`, { method: 'PUT', json: { rules: [{ tool: 'Echo', action: 'ask' }] } });
  t.equal(put.status, 200);
  ran.length = 0;

  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'git push' } }] }, { text: ['Pushed.'] });
  t.same(await prompt(e, sid, 'push it'), { stopReason: 'end_turn' });
  t.equal(e.permissions.length, 1);
  const req = e.permissions[0];
  const call = of(e, 'tool_call')[0];
  t.equal(call.status, 'pending', 'announced as pending: it waits on the answer');
  t.equal(req.toolCall.toolCallId, call.toolCallId, 'the request names the announced call');
  t.same(
    req.options.map((o) => [o.optionId, o.name, o.kind]),
    [
      ['0', 'Allow once', 'allow_once'],
      ['1', 'Allow for this session', 'allow_always'],
      ['2', 'Deny', 'reject_once'],
    ],
  );
  t.same(req.toolCall.rawInput, { say: 'git push' });
  t.match(JSON.stringify(req.toolCall.content), /rule: ask Echo, session/);
  t.same(ran, ['git push'], 'Allow once ran it');
  t.equal(of(e, 'tool_call_update').at(-1)?.status, 'completed');
  t.equal(texts(e, 'agent_message_chunk'), 'Pushed.');

  e.answer = () => ({ outcome: { outcome: 'selected', optionId: '2' } });
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'rm -rf build' } }] }, { text: ['Not deleting.'] });
  t.same(await prompt(e, sid, 'clean up'), { stopReason: 'end_turn' });
  t.same(ran, ['git push'], 'Deny did not run it');
  const denied = of(e, 'tool_call').at(-1)!.toolCallId;
  t.equal(of(e, 'tool_call_update').find((u) => u.toolCallId === denied)?.status, 'failed');

  // The editor dismisses the request: the prompt is cancelled, the session keeps waiting.
  e.answer = () => ({ outcome: { outcome: 'cancelled' } });
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'later' } }] }, { text: ['Ran later.'] });
  t.same(await prompt(e, sid, 'do it later'), { stopReason: 'cancelled' });
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).status, 'waiting_for_input');
  // The next prompt asks it again first, then sends the message.
  e.answer = () => ({ outcome: { outcome: 'selected', optionId: '0' } });
  model.script({ text: ['And hello.'] });
  t.same(await prompt(e, sid, 'hello'), { stopReason: 'end_turn' });
  t.same(ran, ['git push', 'later']);
  t.equal(e.permissions.at(-1)?.toolCall.toolCallId, of(e, 'tool_call').at(-1)?.toolCallId);
  t.match(JSON.stringify(model.requests.at(-1)), /hello/, 'the message went to the model after the approval');

  // Two calls of one turn that need approval: asked one after the other, in the order announced.
  e.permissions.length = 0;
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'one' } }, { name: 'Echo', args: { say: 'two' } }] }, { text: ['Both.'] });
  t.same(await prompt(e, sid, 'both'), { stopReason: 'end_turn' });
  t.same(
    e.permissions.map((p) => p.toolCall.rawInput),
    [{ say: 'one' }, { say: 'two' }],
  );
  t.same(ran, ['git push', 'later', 'one', 'two']);
});

t.test('a question is a permission request whose options are its choices; the pick is the answer', async (t) => {
  const e = fresh();
  const sid = await newSession(e);
  model.script(
    { toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which colour?', header: 'Colour', options: [{ label: 'red' }, { label: 'blue', description: 'the calm one' }] }] } }] },
    { text: ['Blue it is.'] },
  );
  e.answer = () => ({ outcome: { outcome: 'selected', optionId: '1' } });
  t.same(await prompt(e, sid, 'paint it'), { stopReason: 'end_turn' });
  t.equal(e.permissions.length, 1);
  t.equal(e.permissions[0].toolCall.title, 'Colour: Which colour?');
  t.same(
    e.permissions[0].options.map((o) => [o.optionId, o.name]),
    [
      ['0', 'red'],
      ['1', 'blue - the calm one'],
    ],
  );
  t.match(JSON.stringify(model.requests.at(-1)), /chosen: \\"blue\\"/, 'the model got the choice');
  t.equal(texts(e, 'agent_message_chunk'), 'Blue it is.');
});

t.test('session/load replays the stored conversation as updates before it answers', async (t) => {
  t.match(firstSession, /^sess_\w+$/, 'the first test made a session');
  const e = await editor(t);
  await init(e);
  const res = await e.agent.request(acp.methods.agent.session.load, { sessionId: firstSession, cwd: '/tmp', mcpServers: [] });
  t.equal(res.modes?.currentModeId, 'executing');
  t.same(
    e.updates.map((n) => [n.sessionId, n.update.sessionUpdate]),
    [
      [firstSession, 'user_message_chunk'],
      [firstSession, 'agent_message_chunk'],
      [firstSession, 'tool_call'],
      [firstSession, 'tool_call'],
      [firstSession, 'agent_message_chunk'],
    ],
  );
  t.equal(texts(e, 'user_message_chunk'), 'say hi please');
  t.equal(texts(e, 'agent_message_chunk'), 'Let me check.Done: said hi.');
  t.same(
    of(e, 'tool_call').map((c) => [c.title, c.status, c.content]),
    [
      ['TaskCreate: Say hi', 'completed', [{ type: 'content', content: { type: 'text', text: 'Created task #1: Say hi' } }]],
      ['Echo: hi', 'completed', [{ type: 'content', content: { type: 'text', text: 'said hi' } }]],
    ],
  );
  // On the wire: every replayed update is written before the load's answer.
  const frames = e.frames();
  const answered = frames.findIndex((f) => f.id !== undefined && f.result !== undefined && (f.result as { modes?: unknown }).modes);
  t.equal(frames.filter((f, i) => f.method === 'session/update' && i < answered).length, 5);

  // The loaded session takes prompts.
  model.script({ text: ['Still here.'] });
  t.same(await prompt(e, firstSession, 'are you there?'), { stopReason: 'end_turn' });
  t.equal(texts(e, 'agent_message_chunk'), 'Let me check.Done: said hi.Still here.');

  // A run started through another door (a Socket.IO client here) shows live in the editor.
  const seen = e.updates.length;
  model.script({ text: ['From the console.'] });
  const sock = app.socket();
  if (!sock.connected) await next(sock, 'connect');
  const ack = await request(sock, 'chat:send', { session_id: firstSession, message: 'hello from elsewhere' });
  t.equal(ack.ok, true);
  const live = () => e.updates.slice(seen).map((n) => [n.update.sessionUpdate, (n.update as { content?: { text?: string } }).content?.text]);
  await waitFor(() => live().some(([, text]) => text === 'From the console.'), { what: 'the other door’s answer in the editor' });
  t.same(live(), [
    ['user_message_chunk', 'hello from elsewhere'],
    ['agent_message_chunk', 'From the console.'],
  ]);
  t.equal(await e.end(), 0, 'the agent exits 0 when the editor closes its stdin');
});

t.test('unknown sessions, another user’s session, a failed run, a service that is down and a refused key are JSON-RPC errors', async (t) => {
  const e = fresh();
  let err = await rpcError(e.agent.request(acp.methods.agent.session.load, { sessionId: 'sess_nope', cwd: '/tmp', mcpServers: [] }));
  t.equal(err.code, -32002);
  t.equal(err.message, 'session sess_nope not found');
  err = await rpcError(prompt(e, 'sess_nope', 'hi'));
  t.equal(err.code, -32002, 'a prompt to a session not opened on this connection');
  t.match(err.message, /not open on this connection/);

  const other = await app.newUser();
  const theirs = await app.api('/api/sessions', { method: 'POST', json: {}, key: other.key });
  const theirId = (await theirs.json()).session_id;
  const mine = await newSession(e);
  err = await rpcError(e.agent.request(acp.methods.agent.session.load, { sessionId: theirId, cwd: '/tmp', mcpServers: [] }));
  t.equal(err.code, -32002, 'another user’s session is not found (its existence is not revealed)');
  err = await rpcError(e.agent.request(acp.methods.agent.session.setMode, { sessionId: mine, modeId: 'yolo' }));
  t.equal(err.code, -32602);

  // A run that fails on the model: a JSON-RPC error with the run's system:error, and the session
  // takes the next prompt.
  model.script({ status: 400 });
  err = await rpcError(prompt(e, mine, 'fail please'));
  t.equal(err.code, -32603);
  t.match(err.message, /^the run failed: /);
  t.match((err as { data?: unknown }).data, { finish_reason: 'error' });
  model.script({ text: ['fine again'] });
  t.same(await prompt(e, mine, 'again'), { stopReason: 'end_turn' });

  // A port nothing listens on.
  const port = await new Promise<number>((r) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => r(p));
    });
  });
  const down = await editor(t, { AGENTSVC_URL: `http://127.0.0.1:${port}`, AGENTSVC_KEY: app.adminKey });
  await init(down);
  err = await rpcError(newSession(down));
  t.equal(err.code, -32603);
  t.match(err.message, /cannot reach agentsvc at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);

  const badKey = await editor(t, { AGENTSVC_URL: app.url, AGENTSVC_KEY: 'sk-agentsvc-v2-wrongwrongwrongwrongwrongwrongwrong' });
  await init(badKey);
  err = await rpcError(newSession(badKey));
  t.equal(err.code, -32000, 'a refused key is "authentication required"');
  t.match(err.message, /the key from AGENTSVC_KEY was refused \(401/);
});
