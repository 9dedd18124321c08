import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../../src/platform/config/index.js';
import { firstPartySettings } from '../../src/features/plugin-host/first-party.js';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { BIN, cleanEnv } from '../helpers/cli.js';
import { chat, envChecks, offered } from '../plugins/helpers.js';
import { parseMcpServers } from '../../plugins/mcp/config.js';
import { HEALTHY_MS, McpServerConnection } from '../../plugins/mcp/server.js';
import { deadline, pace, waitFor } from '../helpers/wait.js';

// No transport error of a crashed or broken server may surface as an unhandled rejection.
const unhandled: unknown[] = [];
process.on('unhandledRejection', (e) => unhandled.push(e));
t.teardown(() => {
  if (unhandled.length) throw new Error(`unhandled rejections: ${unhandled.map(String).join('; ')}`);
});

const EVERYTHING = resolve('node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const FIXTURE = resolve('test/fixtures/mcp-server.mjs');
const PROBE = resolve('test/fixtures/mcp-probe.mjs');
const node = process.execPath;

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

const until = (what: string, fn: () => Promise<boolean> | boolean, ms = 20_000) => waitFor(fn, { timeoutMs: ms, everyMs: 100, what });

async function httpFixture(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const port = await freePort();
  const child = spawn(node, [FIXTURE, 'http', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  t.teardown(() => child.kill('SIGKILL'));
  const listening = new Promise<void>((ok, fail) => {
    child.stderr!.on('data', (c) => /listening/.test(String(c)) && ok());
    child.once('exit', (code, signal) => fail(new Error(`the MCP HTTP fixture exited (${code ?? signal}) before listening`)));
  });
  await deadline(listening, 20_000, 'the MCP HTTP fixture to listen');
  return `http://127.0.0.1:${port}/mcp`;
}

t.test('a real npm MCP server over stdio and one over streamable HTTP: the agent calls their tools', async (t) => {
  const url = await httpFixture(t);
  const servers = {
    everything: { command: node, args: [EVERYTHING, 'stdio'], run_in: 'host' },
    web: { url },
  };
  const { app, model } = await buildWithModel(t, { AGENTSVC_MCP_SERVERS: JSON.stringify(servers) });
  await until('servers ready', () => app.service.firstParty.mcp().every((c) => c.state === 'ready'));
  t.comment(`service up with both servers ready: ${app.service.firstParty.mcp().map((c) => `${c.name} ${c.tools.length} tools`).join(', ')}`);
  const sid = await createSession(app);
  const { results, end } = await chat(
    app,
    model,
    sid,
    'use the tools',
    {
      toolCalls: [
        { name: 'mcp__everything__echo', args: { message: 'hello over stdio' } },
        { name: 'mcp__web__add', args: { a: 2, b: 3 } },
        { name: 'mcp__web__fail', args: {} },
        { name: 'mcp__everything__echo', args: { message: 42 } },
      ],
    },
    { text: ['done'] },
  );
  t.equal(end.status, 'completed');
  const tools = model.requests[0].tools.map((x: any) => x.function);
  const echo = tools.find((f: any) => f.name === 'mcp__everything__echo');
  t.match(echo, { description: /Echoes back the input string \(MCP server everything\)/, parameters: { type: 'object', properties: { message: { type: 'string' } } } }, "the server's JSON Schema is offered");
  t.notOk('$schema' in echo.parameters);
  t.match(results[0], { status: 'done', result: 'Echo: hello over stdio' });
  t.match(results[1], { status: 'done', result: /^sum=5/ });
  t.match(results[2], { status: 'error', result: 'it broke' }, 'an MCP error result is a tool error');
  t.match(results[3], { status: 'error', result: /Invalid arguments for mcp__everything__echo: message must be string/ }, 'arguments are validated against its schema');
  const long = offered(model, 0).find((n) => n.startsWith('mcp__web__a_tool'))!;
  t.ok(long && long.length <= 64 && /_[0-9a-f]{8}$/.test(long), `a long tool name is cut with a hash (${long})`);
  const again = await chat(app, model, sid, 'long', { toolCalls: [{ name: long, args: {} }] }, { text: ['ok'] });
  t.equal(again.results[0].result, 'long ran', 'and mapped back for the call');
  const checks = await envChecks(app);
  t.match(checks['mcp:everything'], { status: 'warn', detail: /tools \(stdio, on the host, as the service's user, outside any user's computer: run_in "host"\)/, fix: /remove run_in/ }, 'run_in: host is a warning');
  t.match(checks['mcp:web'], { status: 'ok', detail: /5 tools \(HTTP http:\/\/127\.0\.0\.1:/ });
  t.match(app.service.warnings.join('\n'), /stdio MCP servers run on the service's host \(run_in: host\).*everything/);
  const off = await createSession(app, app.adminKey, { disable_tools: ['mcp'] });
  await chat(app, model, off, 'x', { text: ['ok'] });
  t.notOk(offered(model, model.requests.length - 1).some((n) => n.startsWith('mcp__')), 'disable_tools: ["mcp"] removes them');
});

t.test('list_changed at the next model call, call timeout, a server killed mid-session comes back', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MCP_SERVERS: JSON.stringify({ fix: { command: node, args: [FIXTURE, 'stdio', '500'], timeout_ms: 3000, run_in: 'host' } }) });
  const fix = () => app.service.firstParty.mcp()[0];
  await until('ready', () => fix().state === 'ready');
  const sid = await createSession(app);
  const grown = await chat(app, model, sid, 'grow', { toolCalls: [{ name: 'mcp__fix__grow', args: {} }] }, { toolCalls: [{ name: 'mcp__fix__extra', args: {} }] }, { text: ['ok'] });
  t.notOk(offered(model, 0).includes('mcp__fix__extra'));
  t.ok(offered(model, 1).includes('mcp__fix__extra'), 'tools/list_changed applied at the next model call of the same run');
  t.same(grown.results.map((r) => r.result), ['grown', 'extra ran']);

  const slow = await chat(app, model, sid, 'slow', { toolCalls: [{ name: 'mcp__fix__slow', args: {} }] }, { text: ['ok'] });
  t.match(slow.results[0], { status: 'error', result: /did not answer slow within 3000 ms/ });
  t.equal(slow.end.status, 'completed', 'a timeout is a tool error, not a failed run');

  // Killed while a call is in flight: that call ends with a tool error at once, not at its timeout.
  const pid = fix().pid!;
  t.ok(pid > 0);
  const { sock, seen } = await watch(app, sid);
  model.script({ toolCalls: [{ name: 'mcp__fix__slow', args: {} }] }, { text: ['ok'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'slow again' });
  await until('call in flight', () => seen.some((e) => e.payload?.patch_type === 'add_tool_call'));
  const killedAt = Date.now();
  process.kill(pid, 'SIGKILL');
  await untilEnd(seen, sid, 30_000);
  const r = seen.find((e) => e.payload?.patch_type === 'tool_result')!.payload.data;
  t.match(r, { status: 'error', result: /MCP fix\/slow failed: .*(closed|Connection)/i }, `the in-flight call failed: ${r.result}`);
  t.ok(Date.now() - killedAt < 2900, 'before the call timeout');
  sock.disconnect();
  await until('crash seen', () => fix().state !== 'ready');
  const down = await envChecks(app);
  t.match(down['mcp:fix'], { status: /fail|warn/, detail: /withdrawn|starting/ });
  const during = await chat(app, model, sid, 'while down', { text: ['ok'] });
  t.equal(during.end.status, 'completed', 'the service goes on without the server');
  t.notOk(offered(model, model.requests.length - 1).some((n) => n.startsWith('mcp__fix__')), 'its tools are withdrawn');
  await until('restarted', () => fix().state === 'ready', 30_000);
  t.comment(`tools back ${Date.now() - killedAt} ms after the kill`);
  t.ok(fix().restarts >= 1);
  const back = await chat(app, model, sid, 'back', { toolCalls: [{ name: 'mcp__fix__add', args: { a: 1, b: 1 } }] }, { text: ['ok'] });
  t.match(back.results[0].result, /^sum=2 pid=(\d+)/);
  t.not(/pid=(\d+)/.exec(back.results[0].result)![1], String(pid), 'a fresh process');
  const up = (await envChecks(app))['mcp:fix'];
  t.match(up, { status: 'warn', detail: /^5 tools .*; restarted [1-9]\d* times/ }, JSON.stringify(up));
});

t.test('servers that never answer, answer garbage or exit at once: reported, the service runs on', async (t) => {
  const servers = {
    mute: { command: node, args: ['-e', 'setInterval(() => {}, 1000)'], start_timeout_ms: 1500, run_in: 'host' },
    garbage: { command: node, args: ['-e', 'setInterval(() => console.log("garbage {"), 50)'], start_timeout_ms: 1500, run_in: 'host' },
    quits: { command: node, args: ['-e', 'console.error("no config"); process.exit(3)'], run_in: 'host' },
    missing: { command: '/nonexistent/mcp-server', run_in: 'host' },
    nohttp: { url: 'http://127.0.0.1:9/mcp', start_timeout_ms: 1500 },
  };
  const { app, model } = await buildWithModel(t, { AGENTSVC_MCP_SERVERS: JSON.stringify(servers) });
  const warnings = app.service.warnings.join('\n');
  for (const name of Object.keys(servers)) t.match(warnings, new RegExp(`MCP server ${name} did not start`), `up warns about ${name}`);
  const checks = await envChecks(app);
  t.match(checks['mcp:mute'], { status: /fail|warn/, detail: /did not answer within 1500 ms|starting/ });
  t.match(checks['mcp:quits'], { status: /fail|warn/ });
  t.match(checks['mcp:missing'], { status: /fail|warn/ });
  t.match(checks['mcp:nohttp'], { status: /fail|warn/ });
  t.match(app.service.warnings.join('\n'), /MCP server quits did not start: .*no config/, 'the stderr tail says why');
  const sid = await createSession(app);
  const { end } = await chat(app, model, sid, 'hi', { text: ['hello'] });
  t.equal(end.status, 'completed');
  t.notOk(offered(model, 0).some((n) => n.startsWith('mcp__')));
  t.equal((await app.api('/api/health')).status, 200);
});

t.test('a server that keeps crashing is restarted 1 s, 2 s, 4 s later: the backoff doubles', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-mcp-crash-'));
  const starts = join(dir, 'starts');
  const crash = `require('fs').appendFileSync(${JSON.stringify(starts)}, Date.now() + '\\n'); process.exit(1)`;
  const { app } = await buildWithModel(t, { AGENTSVC_MCP_SERVERS: JSON.stringify({ crashy: { command: node, args: ['-e', crash], run_in: 'host' } }) });
  const times = () => (existsSync(starts) ? readFileSync(starts, 'utf8').trim().split('\n').map(Number) : []);
  await until('four starts', () => times().length >= 4, 40_000);
  const at = times();
  const gaps = at.slice(1, 4).map((x, i) => x - at[i]);
  t.comment(`gaps between starts: ${gaps.join(', ')} ms`);
  // Each gap is the delay plus the process's start and crash: never shorter than the delay.
  t.ok(gaps[0] >= 950, `first restart after about 1 s (${gaps[0]} ms)`);
  t.ok(gaps[1] >= 1950, `then 2 s (${gaps[1]} ms)`);
  t.ok(gaps[2] >= 3950, `then 4 s (${gaps[2]} ms)`);
  t.match((await envChecks(app))['mcp:crashy'], { status: /fail|warn/ });
});

t.test('healthy for healthyMs resets the backoff to 1 s; a crash sooner after a start goes on doubling', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-mcp-reset-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const starts = join(dir, 'starts');
  const flag = join(dir, 'crash');
  writeFileSync(flag, '');
  // Each start is noted; while the flag file exists the server exits at once, else it serves.
  const script = `const fs = require('fs'); fs.appendFileSync(${JSON.stringify(starts)}, Date.now() + '\\n'); if (fs.existsSync(${JSON.stringify(flag)})) process.exit(1); import(${JSON.stringify(pathToFileURL(PROBE).href)});`;
  const logs: string[] = [];
  // The production rule (HEALTHY_MS, a minute) with 3 s of health instead: the same code path, seconds of waiting.
  const healthyMs = 3000;
  t.equal(HEALTHY_MS, 60_000, 'production: a minute of health');
  const conn = new McpServerConnection('flaky', parseMcpServers({ flaky: { command: node, args: ['-e', script], run_in: 'host' } }).flaky, {
    timeoutMs: 5000,
    startTimeoutMs: 10_000,
    onToolsChanged: () => {},
    log: (m) => logs.push(m),
    healthyMs,
  });
  t.teardown(() => conn.stop());
  const times = () => (existsSync(starts) ? readFileSync(starts, 'utf8').trim().split('\n').map(Number) : []);
  /** The restart delays the connection announced, in seconds, in order. */
  const delays = () => logs.flatMap((m) => /restarting in (\d+) s$/.exec(m)?.[1] ?? []).map(Number);
  void conn.start();
  await until('three failed starts', () => times().length >= 3, 30_000);
  rmSync(flag);
  // The next delay is 4 s (then 8, 16 had it kept failing); this start succeeds.
  await until('ready', () => conn.state === 'ready', 30_000);
  t.same(delays(), [1, 2, 4], 'failed starts: 1 s, 2 s, 4 s');
  const readyAt = Date.now();
  await pace(healthyMs + 200, 'the server stays up longer than healthyMs');
  t.equal(conn.state, 'ready');
  const before = times().length;
  const killedAt = Date.now();
  t.ok(killedAt - readyAt >= healthyMs, 'healthy for healthyMs');
  process.kill(conn.pid!, 'SIGKILL');
  await until('restarted', () => times().length > before, 30_000);
  t.same(delays(), [1, 2, 4, 1], 'the crash after healthyMs of health restarts after 1 s again');
  const gap = times()[before] - killedAt;
  t.comment(`restart ${gap} ms after the crash that followed ${healthyMs} ms of health`);
  t.ok(gap >= 950 && gap < 4000, `restarted after about 1 s, not 8 s (${gap} ms)`);

  // Up again, and killed at once (well within healthyMs): the backoff goes on from 1 s, to 2 s.
  await until('ready again', () => conn.state === 'ready', 30_000);
  process.kill(conn.pid!, 'SIGKILL');
  await until('the second crash seen', () => delays().length === 5, 10_000);
  t.same(delays(), [1, 2, 4, 1, 2], 'a crash soon after a start: the next delay doubles');
});

t.test('a malformed AGENTSVC_MCP_SERVERS stops up with the setting named', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-mcp-'));
  const bad = ['{not json', '[]', '{"Bad Name": {"command": "x"}}', '{"a": {"command": ""}}', '{"a": {"url": "ftp://x"}}', '{"a": {"nothing": 1}}', '{"a": {"command": "x", "extra": 1}}'];
  for (const value of bad) t.throws(() => firstPartySettings(loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_MCP_SERVERS: value } })), /invalid setting AGENTSVC_MCP_SERVERS: /, value);
  writeFileSync(join(home, 'config.json'), JSON.stringify({ mcp: { fs: { command: 'npx', args: ['-y', 'x'] } } }));
  t.same(firstPartySettings(loadConfig({ env: { AGENTSVC_HOME: home } })).mcp, { fs: { command: 'npx', args: ['-y', 'x'], env: {}, run_in: 'computer' } }, 'config.json `mcp` is read (stdio servers run in users\' computers by default)');
  writeFileSync(join(home, 'config.json'), JSON.stringify({ mcp: { fs: { command: 1 } } }));
  t.throws(() => firstPartySettings(loadConfig({ env: { AGENTSVC_HOME: home } })), /AGENTSVC_MCP_SERVERS: server fs: command/);
  t.doesNotThrow(() => loadConfig({ env: { AGENTSVC_HOME: home } }), 'the config leaves the section to the MCP plugin');
  const r = spawnSync(node, [BIN, 'up', '--port', '0'], { env: { ...cleanEnv(), AGENTSVC_HOME: home, AGENTSVC_MCP_SERVERS: '{"x": 1}' }, encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 1);
  t.match(r.stderr + r.stdout, /AGENTSVC_MCP_SERVERS: server x: must be an object/);
  t.notMatch(r.stderr, /at .*\.js:\d+/, 'no stack trace');
});
