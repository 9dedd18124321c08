import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { buildWithModel, createSession, echoTool, shape, untilEnd, watch } from '../helpers/chat.js';
import type { TestApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The MCP server door (docs/protocol-doors.md), driven by the official SDK client over Streamable
 * HTTP: a run it starts is the session's run that every Socket.IO client sees live; questions and
 * approvals end it with what is pending, answered with the `answer` tool.
 */

const execFileP = promisify(execFile);

type T = { teardown(fn: () => unknown): void };

/** An SDK client over Streamable HTTP with `key` as its bearer (default: a new user's, so each test sees its own sessions). */
async function mcp(t: T, app: TestApp, key?: string): Promise<Client & { key: string }> {
  key ??= (await app.newUser()).key;
  const client = new Client({ name: 'agentsvc-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  t.teardown(() => client.close());
  return Object.assign(client, { key });
}

type Result = { isError?: boolean; structuredContent?: any; content: { type: string; text: string }[] };
const call = async (c: Client, name: string, args: Record<string, unknown>, onprogress?: (p: { progress: number; message?: string }) => void) =>
  (await c.callTool({ name, arguments: args }, undefined, { onprogress, timeout: 30_000 })) as Result;
const errorBody = (r: Result) => JSON.parse(r.content[0].text);

// One service for the file (each test uses sessions of its own): Echo asks for approval when its
// argument holds "secret" (install policy), which no other test says.
const POLICY = JSON.stringify({ default: 'allow', rules: [{ tool: 'Echo', pattern: '*secret*', action: 'ask' }] });
const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: POLICY });
const ran: string[] = [];
app.service.tools.register(echoTool(ran));

t.test('tools and resources are offered; a key is required', async (t) => {
  const noKey = await fetch(`${app.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  t.equal(noKey.status, 401);
  t.same(await noKey.json(), { detail: 'missing or invalid API key', code: 'UNAUTHORIZED' });
  const get = await app.api('/mcp', { headers: { accept: 'text/event-stream' } });
  t.equal(get.status, 405, 'no MCP session kept: GET is not offered');
  t.equal(get.headers.get('allow'), 'POST');
  t.equal((await app.api('/mcp', { method: 'DELETE' })).status, 405);

  const c = await mcp(t, app);
  t.equal(c.getServerVersion()?.name, 'agentsvc');
  const tools = (await c.listTools()).tools.map((x) => x.name).sort();
  t.same(tools, ['answer', 'create_session', 'get_messages', 'list_sessions', 'send_message']);
  const templates = (await c.listResourceTemplates()).resourceTemplates;
  t.same(templates.map((r) => r.uriTemplate), ['session://{session_id}']);
});

t.test('send_message runs the session: progress while it runs, the answer at its end, seen live by a socket', async (t) => {
  const c = await mcp(t, app);
  const created = await call(c, 'create_session', { intent: 'from mcp' });
  const sid = created.structuredContent.session_id;
  t.match(sid, /^sess_/);
  const { seen } = await watch(app, sid, c.key);

  model.script({ text: ['Let me ', 'check.'], toolCalls: [{ name: 'Echo', args: { say: 'hi' } }] }, { text: ['It ', 'said hi.'], usage: { prompt_tokens: 10, completion_tokens: 4 } });
  const progress: string[] = [];
  const r = await call(c, 'send_message', { session_id: sid, message: 'echo hi' }, (p) => progress.push(p.message ?? ''));
  t.notOk(r.isError);
  t.same(ran, ['hi']);
  const s = r.structuredContent;
  t.match(s, { session_id: sid, status: 'completed', finish_reason: 'stop', text: 'It said hi.', pending: [] });
  t.equal(s.turn_ids.length, 3, 'the user turn and two assistant turns');
  t.equal(r.content[0].text, 'It said hi.');
  // Text deltas come as the engine batches them: what is known is their order and their sum.
  t.same(progress.filter((m) => m.startsWith('[')), ['[Echo: running]', '[tool done]'], 'progress notifications carry the tool call');
  t.equal(progress.join(''), 'Let me check.[Echo: running][tool done]It said hi.', '... and the text, in order');

  // The socket subscribed before the run saw it all live, with the same turn ids.
  await untilEnd(seen, sid);
  const names = shape(seen).filter((n, i, all) => n !== 'turn:patch:usage' && !(n === 'turn:patch:add_content' && all[i - 1] === n));
  t.same(names, [
    'chat:start',
    'turn:start',
    'turn:end',
    'turn:start',
    'turn:patch:add_content',
    'turn:patch:add_tool_call',
    'turn:patch:tool_result',
    'turn:end',
    'turn:start',
    'turn:patch:add_content',
    'turn:end',
    'chat:end',
  ]);
  const starts = seen.filter((e) => e.name === 'turn:start').map((e) => e.payload.turn_id);
  t.same(s.turn_ids, starts, 'the turn ids the socket saw start');
  t.same(s.usage, seen.at(-1)?.payload.usage, "usage is chat:end's");

  const msgs = await call(c, 'get_messages', { session_id: sid, limit: 2 });
  t.equal(msgs.structuredContent.total, 3);
  t.same(msgs.structuredContent.messages.map((m: any) => m.turn_id), s.turn_ids.slice(1));
  const listed = await call(c, 'list_sessions', {});
  t.same(listed.structuredContent.items.map((x: any) => x.id), [sid]);
  const res = await c.readResource({ uri: `session://${sid}` });
  const md = (res.contents[0] as { text: string }).text;
  t.match(md, /^# from mcp\n\n## User\n\necho hi\n\n## Assistant\n\nLet me check\.\n\n\*\*Echo\*\* \(done\)/);
  t.match(md, /## Assistant\n\nIt said hi\.\n$/);
  t.same((await c.listResources()).resources.map((x) => x.uri), [`session://${sid}`]);
});

t.test("a socket's run: MCP is refused while it runs, then reads what it stored", async (t) => {
  const c = await mcp(t, app);
  const sid = await createSession(app, c.key);
  const { sock, seen } = await watch(app, sid, c.key);
  model.script({ text: ['slow'], delayMs: 400 });
  sock.emit('chat:send', { session_id: sid, message: 'hello' });
  await waitFor(async () => (await (await app.api(`/api/sessions/${sid}`, { key: c.key })).json()).status === 'running', { what: 'the socket run running' });
  const r = await call(c, 'send_message', { session_id: sid, message: 'me too' });
  t.equal(r.isError, true);
  t.same(errorBody(r).code, 'SESSION_BUSY');
  await untilEnd(seen, sid);
  const msgs = await call(c, 'get_messages', { session_id: sid });
  t.same(msgs.structuredContent.messages.map((m: any) => m.role), ['user', 'assistant'], 'the refused message stored nothing');
  t.equal(msgs.structuredContent.messages[1].blocks[0].content, 'slow');
});

t.test("a call the client cancels stops the run (chat:end interrupted, seen live by a socket); another client's same id does not", async (t) => {
  const c = await mcp(t, app);
  const sid = (await call(c, 'create_session', {})).structuredContent.session_id;
  const { seen } = await watch(app, sid, c.key);
  model.script({ hang: true });
  const ac = new AbortController();
  const running = c.callTool({ name: 'send_message', arguments: { session_id: sid, message: 'wait' } }, undefined, { signal: ac.signal, timeout: 30_000 });
  await waitFor(() => seen.some((e) => e.name === 'chat:start'), { what: 'the run started' });
  // A second client of the same user and key: its JSON-RPC ids are its own (the same numbers), so
  // its cancellation of "that" id is not this call's.
  const other = await mcp(t, app, c.key);
  const stranger = await fetch(`${app.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': (other.transport as StreamableHTTPClientTransport).sessionId ?? '', 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify([0, 1, 2, 3, 4, 5].map((requestId) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } }))),
  });
  t.equal(stranger.status, 202);
  t.match((other.transport as StreamableHTTPClientTransport).sessionId, /^mcps_/, 'the door named the client at initialize');
  t.equal((await (await app.api(`/api/sessions/${sid}`, { key: c.key })).json()).status, 'running', "another client's cancellation left it running");
  ac.abort('changed my mind');
  await t.rejects(running, /changed my mind/);
  await untilEnd(seen, sid);
  t.match(seen.at(-1), { name: 'chat:end', payload: { session_id: sid, status: 'interrupted' } });
});

t.test('a question ends the call with what is pending; answer resumes the run', async (t) => {
  const c = await mcp(t, app);
  const sid = (await call(c, 'create_session', {})).structuredContent.session_id;
  const questions = [{ question: 'Which?', header: 'Pick', multiSelect: false, options: [{ label: 'A', description: 'a' }, { label: 'B', description: 'b' }] }];
  model.script({ text: ['Let me ask.'], toolCalls: [{ name: 'AskUserQuestion', args: { questions } }] }, { text: ['You chose B.'] });
  const r = await call(c, 'send_message', { session_id: sid, message: 'ask me' });
  const s = r.structuredContent;
  t.match(s, { status: 'waiting_for_input', finish_reason: 'tool_question', text: 'Let me ask.' });
  t.equal(s.pending.length, 1);
  t.match(s.pending[0], { type: 'question', tool_name: 'AskUserQuestion', questions });
  t.match(r.content[0].text, /Waiting for input: question \(tool_call_id .+\)\. Call `answer`\./);

  const bad = await call(c, 'answer', { session_id: sid, tool_call_id: s.pending[0].tool_call_id, selections: { 0: [5] } });
  t.equal(bad.isError, true);
  t.match(errorBody(bad), { code: 'VALIDATION_ERROR', detail: /option 5 out of range/ });
  const wrong = await call(c, 'answer', { session_id: sid, tool_call_id: 'tc_nope', selections: { 0: [0] } });
  t.match(errorBody(wrong), { code: 'NO_PENDING_QUESTION' });

  const a = await call(c, 'answer', { session_id: sid, tool_call_id: s.pending[0].tool_call_id, selections: { 0: [1] } });
  t.match(a.structuredContent, { status: 'completed', finish_reason: 'stop', text: 'You chose B.', pending: [] });
  const turns = (await call(c, 'get_messages', { session_id: sid })).structuredContent.messages;
  const roleOf = new Map(turns.map((m: any) => [m.turn_id ?? m.id, m.role]));
  // The paused turn ends again with its status after the answer (docs/socket-protocol.md), then the new one.
  t.equal(a.structuredContent.turn_ids.length, 2, 'the paused turn and the assistant turn after the answer');
  t.same(a.structuredContent.turn_ids.map((id: string) => roleOf.get(id)), ['assistant', 'assistant'], 'an answer stores no user turn');
  t.match(turns[1].tool_calls[0], { status: 'done', result: /chosen: "B"/ });
});

t.test('an approval is pending with its options; Deny answers it; policy and audit apply', async (t) => {
  ran.length = 0;
  const c = await mcp(t, app);
  const sid = (await call(c, 'create_session', {})).structuredContent.session_id;
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'the secret' } }] }, { text: ['Not run.'] });
  const r = await call(c, 'send_message', { session_id: sid, message: 'go' });
  t.match(r.structuredContent, { status: 'waiting_for_input', finish_reason: 'tool_approval' });
  const p = r.structuredContent.pending[0];
  t.match(p, { type: 'approval', tool_name: 'Echo', arguments: { say: 'the secret' }, source: 'install', options: ['Allow once', 'Allow for this session', 'Deny'] });
  const a = await call(c, 'answer', { session_id: sid, tool_call_id: p.tool_call_id, selections: { 0: [2] }, custom: { 0: 'not now' } });
  t.match(a.structuredContent, { status: 'completed', text: 'Not run.' });
  t.same(ran, [], 'denied: never ran');
  const audit = await (await app.api(`/api/audit?session_id=${sid}`, { key: c.key })).json();
  t.same(audit.items.map((x: { action: string }) => x.action), ['rejected', 'asked']);
});

t.test("another user's session is refused as not found; bad input is a tool error, never a 5xx", async (t) => {
  const other = await app.newUser();
  const theirs = await createSession(app, other.key);
  const c = await mcp(t, app);
  for (const [name, args] of [
    ['send_message', { session_id: theirs, message: 'hi' }],
    ['get_messages', { session_id: theirs }],
    ['answer', { session_id: theirs, tool_call_id: 'tc_x', selections: {} }],
  ] as const) {
    const r = await call(c, name, args);
    t.equal(r.isError, true, name);
    t.same(errorBody(r), { detail: 'session not found', code: 'NOT_FOUND' }, name);
  }
  await t.rejects(c.readResource({ uri: `session://${theirs}` }), /session not found/);
  const mine = (await call(c, 'list_sessions', {})).structuredContent;
  t.same(mine.items, [], "the other user's session is not listed");

  const badModel = await call(c, 'create_session', { model: 'nope' });
  t.match(errorBody(badModel), { code: 'VALIDATION_ERROR', detail: [{ loc: ['body', 'model'] }] });
  const empty = await call(c, 'send_message', { session_id: theirs, message: '' });
  t.equal(empty.isError, true, 'an empty message breaks the input schema');
  t.match(empty.content[0].text, /message/);
  const wrongType = await call(c, 'list_sessions', { limit: 'ten' });
  t.equal(wrongType.isError, true);
  const unknown = await call(c, 'no_such_tool', {});
  t.equal(unknown.isError, true);
  t.match(unknown.content[0].text, /Tool no_such_tool not found/);

  const raw = await app.api('/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc": "2.0", "id": 1, "method": 5}' });
  t.equal(raw.status, 400, 'a malformed JSON-RPC message is a 400');
  const notJson = await app.api('/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":' });
  t.equal(notJson.status, 400);
  t.match(await notJson.json(), { code: String });
});

t.test('the MCP Inspector CLI lists the tools and calls one', async (t) => {
  // A devDependency: the Inspector's command-line mode (`inspector --cli` runs this package).
  const cli = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector-cli/package.json')), 'build', 'cli.js');
  // Its own process (the service runs in this one): spawned, never spawnSync. Run from its build
  // folder: the CLI looks for its package.json by a path relative to the working directory.
  const run = async (...args: string[]) => {
    const argv = [cli, '--cli', `${app.url}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${app.adminKey}`, ...args];
    const r = await execFileP(process.execPath, argv, { timeout: 30_000, cwd: dirname(cli) });
    return JSON.parse(r.stdout);
  };
  t.same((await run('--method', 'tools/list')).tools.map((x: { name: string }) => x.name).sort(), ['answer', 'create_session', 'get_messages', 'list_sessions', 'send_message']);
  const created = await run('--method', 'tools/call', '--tool-name', 'create_session', '--tool-arg', 'intent=from the inspector');
  const sid = created.structuredContent.session_id;
  t.match(sid, /^sess_/);
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).intent, 'from the inspector');
});
