import t from 'tap';
import { resolve } from 'node:path';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';
import { chat, offered } from '../plugins/helpers.js';

const FIXTURE = resolve('test/fixtures/mcp-server.mjs');

t.test("an MCP server's tools past AGENTSVC_TOOLS_DIRECT_MAX: found through ToolSearch, not callable before", async (t) => {
  // 14 built-in tools and the fixture's 5: past a maximum of 15, the MCP tools wait to be found.
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_MCP_SERVERS: JSON.stringify({ fix: { command: process.execPath, args: [FIXTURE, 'stdio'], run_in: 'host' } }),
    AGENTSVC_TOOLS_DIRECT_MAX: '15',
  });
  await waitFor(() => app.service.firstParty.mcp().every((c) => c.state === 'ready'), { what: 'the MCP server ready', timeoutMs: 30_000 });
  const sid = await createSession(app);
  const { results, seen } = await chat(
    app,
    model,
    sid,
    'add 2 and 3',
    // Called before it was found: not offered, so not run.
    { toolCalls: [{ name: 'mcp__fix__add', args: { a: 2, b: 3 } }] },
    { toolCalls: [{ name: 'ToolSearch', args: { query: 'add two numbers', limit: 1 } }] },
    { toolCalls: [{ name: 'mcp__fix__add', args: { a: 2, b: 3 } }] },
    { text: ['5'] },
  );
  const first = offered(model, 0);
  t.ok(first.includes('ToolSearch'), 'ToolSearch offered');
  t.equal(first.filter((n) => n.startsWith('mcp__')).length, 0, 'no MCP tool offered before a search');
  t.equal(first.length, 15, '14 built-in tools and ToolSearch');
  t.match(results[0], { status: 'error', result: /^Unknown or unavailable tool "mcp__fix__add"/ }, 'a deferred tool the model guessed does not run');
  t.match(results[1], { status: 'done', result: /^1 tool\(s\) found; they can be called from now on in this run:\n- mcp__fix__add: Add two numbers \(MCP server fix\) \(parameters: a b\)$/ });
  t.same(offered(model, 2).filter((n) => n.startsWith('mcp__')), ['mcp__fix__add'], 'the found tool is offered');
  t.match(results[2], { status: 'done', result: /sum=5/ }, 'and runs');
  t.same(offered(model, 3).filter((n) => n.startsWith('mcp__')), ['mcp__fix__add'], 'still offered on the last call of the run');
  t.match(
    seen.find((e) => e.name === 'system:notice' && e.payload.code === 'TOOLS_DEFERRED')?.payload,
    { deferred: 5, direct: 14 },
  );

  // The next run of the session: the tool it called is offered again, as a recently used one.
  await chat(app, model, sid, 'again', { text: ['ok'] });
  t.same(offered(model, 4).filter((n) => n.startsWith('mcp__')), ['mcp__fix__add'], 'recently used tools are offered directly');
});

t.test('at or under AGENTSVC_TOOLS_DIRECT_MAX every tool is offered and no ToolSearch', async (t) => {
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_MCP_SERVERS: JSON.stringify({ fix: { command: process.execPath, args: [FIXTURE, 'stdio'], run_in: 'host' } }),
    AGENTSVC_TOOLS_DIRECT_MAX: '19',
  });
  await waitFor(() => app.service.firstParty.mcp().every((c) => c.state === 'ready'), { what: 'the MCP server ready', timeoutMs: 30_000 });
  const sid = await createSession(app);
  await chat(app, model, sid, 'hi', { text: ['ok'] });
  const names = offered(model, 0);
  t.equal(names.length, 19);
  t.notOk(names.includes('ToolSearch'));
});
