import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { startFakeModel } from '../fixtures/fake-model.js';
import type { TestApp } from '../helpers/app.js';
import { untilEnd, watch } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';
import { approveDevice, Jar, withProvider } from '../identity/oidc.js';

/**
 * The MCP door authorized by a sign-in (docs/protocol-doors.md): the token `agentsvc login` stores
 * (the device flow with the real OpenID Provider of test/identity) is a bearer the official SDK
 * client presents at /mcp, with the same role and owner checks as a key, and revoking the sign-in
 * refuses it at once, also the answer it is streaming.
 */

const model = await startFakeModel();
t.teardown(() => model.close());
const { app } = await withProvider(t, { OPENAI_BASE_URL: model.baseUrl, AGENTSVC_MODEL: 'fake-model' });

/** What `agentsvc login` does: the device flow, approved at the provider as `login`; answers the stored token. */
async function loginToken(app: TestApp, login: string): Promise<string> {
  const start = await (await app.api('/api/auth/device', { method: 'POST', key: null })).json();
  await approveDevice(new Jar(), start.verification_uri_complete, login);
  const r = await (await app.api('/api/auth/device/token', { method: 'POST', key: null, json: { request_id: start.request_id } })).json();
  if (r.status !== 'ok') throw new Error(`device sign-in of ${login}: ${JSON.stringify(r)}`);
  return r.token;
}

async function mcp(t: { teardown(fn: () => unknown): void }, token: string): Promise<Client> {
  const client = new Client({ name: 'agentsvc-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  t.teardown(() => client.close());
  return client;
}

type Result = { isError?: boolean; structuredContent?: any; content: { type: string; text: string }[] };
const call = async (c: Client, name: string, args: Record<string, unknown>, opts: { timeout?: number; onprogress?: () => void } = {}) =>
  (await c.callTool({ name, arguments: args }, undefined, { timeout: opts.timeout ?? 30_000, onprogress: opts.onprogress })) as Result;

const initialize = (token: string) =>
  fetch(`${app.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });

t.test("a member's sign-in token drives a session through MCP; another user's session is not found", async (t) => {
  const token = await loginToken(app, 'bob');
  t.match(token, /^sgt-/);
  const c = await mcp(t, token);
  const sid = (await call(c, 'create_session', { intent: 'signed in' })).structuredContent.session_id;
  model.script({ text: ['Hello ', 'bob.'] });
  const r = await call(c, 'send_message', { session_id: sid, message: 'hi' });
  t.match(r.structuredContent, { session_id: sid, status: 'completed', text: 'Hello bob.' });
  const listed = await (await app.api('/api/sessions', { key: token })).json();
  t.same(listed.items.map((s: { id: string }) => s.id), [sid], "the session is the signed-in user's, as REST lists it");

  const alice = await loginToken(app, 'alice');
  const theirs = await call(await mcp(t, alice), 'get_messages', { session_id: sid });
  t.equal(theirs.isError, true);
  t.same(JSON.parse(theirs.content[0].text), { detail: 'session not found', code: 'NOT_FOUND' });
});

t.test("a viewer's sign-in token is refused at /mcp (FORBIDDEN_ROLE), as on every route that runs sessions", async (t) => {
  const r = await initialize(await loginToken(app, 'vic'));
  t.equal(r.status, 403);
  t.same(await r.json(), { detail: 'a viewer may not POST /mcp', code: 'FORBIDDEN_ROLE' });
});

t.test('a revoked sign-in: its streaming answer ends at once (the run goes on), and it is refused after', async (t) => {
  const token = await loginToken(app, 'bob');
  // A key of bob's own watches the run: the sign-in's revocation closes the sign-in's sockets too.
  const key = (await (await app.api('/api/user/api-keys/', { method: 'POST', key: token, json: { name: 'watch' } })).json()).plaintext;
  const c = await mcp(t, token);
  const sid = (await call(c, 'create_session', {})).structuredContent.session_id;
  const { seen } = await watch(app, sid, key);
  model.script({ text: ['one ', 'two ', 'three ', 'four ', 'five ', 'six'], delayMs: 300 });
  let progressed = 0;
  const running = call(c, 'send_message', { session_id: sid, message: 'count' }, { timeout: 15_000, onprogress: () => progressed++ });
  await waitFor(() => progressed > 0, { what: 'the first progress notification' });

  const t0 = Date.now();
  const signins = await (await app.api('/api/auth/signins', { key: token })).json();
  const current = signins.items.find((s: { current: boolean }) => s.current);
  const revoke = await app.api(`/api/auth/signins/${current.id}`, { method: 'DELETE', key: token });
  t.equal(revoke.status, 204);
  const r = await running;
  t.ok(Date.now() - t0 < 5000, `answered within 5 s of the revocation (${Date.now() - t0} ms)`);
  t.equal(r.isError, true);
  t.same(JSON.parse(r.content[0].text), { detail: 'the credential of this request was revoked; the run goes on', code: 'UNAUTHORIZED' });
  t.ok(seen.every((e) => e.name !== 'chat:end'), 'the run is still going');

  const after = await initialize(token);
  t.equal(after.status, 401);
  t.same(await after.json(), { detail: 'missing or invalid API key', code: 'UNAUTHORIZED' });

  // The run was not stopped: it ends completed, as the other clients see it.
  await untilEnd(seen, sid);
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed', finish_reason: 'stop' } });
});
