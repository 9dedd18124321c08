import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { io as connect } from 'socket.io-client';
import t from 'tap';
import { Hooks } from '../../src/core/engine/hooks.js';
import { executableName, parseTraceparent, startTracing } from '../../src/features/telemetry/traces.js';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/**
 * OTLP traces (docs/operations.md) against an OTLP/HTTP receiver in this process: a chat with a tool call
 * gives one trace, a run span with a child per model call (GenAI attributes, token usage) and per
 * tool call. Without OTEL_EXPORTER_OTLP_ENDPOINT the SDK is not even loaded.
 */
type T = { teardown(fn: () => unknown): void };

t.setTimeout(120_000);

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  startTimeUnixNano: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

const attrs = (s: OtlpSpan) => Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]]));

/** An OTLP/HTTP receiver in this process, pointed at by the standard variables for one test. */
async function receiver(t: T) {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      for (const rs of JSON.parse(body).resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
  t.teardown(() => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  });
  const until = (what: string, ok: () => boolean) => waitFor(ok, { timeoutMs: 15_000, what });
  return { spans, paths, until };
}

/** The spans as an indented tree (printed for the note, and compared). */
function tree(spans: OtlpSpan[], parent: string | undefined, depth = 0): string[] {
  return spans
    .filter((s) => (s.parentSpanId || undefined) === parent)
    .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
    .flatMap((s) => [`${'  '.repeat(depth)}${s.name}`, ...tree(spans, s.spanId, depth + 1)]);
}

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

t.test('one trace from a chat:send to its last sandbox command, continuing the handshake traceparent', async (t) => {
  const { spans, paths, until } = await receiver(t);
  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) => {
    const tools = body.messages.filter((m: any) => m.role === 'tool').length;
    if (tools === 0) return { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'hi\n' } }], usage: { prompt_tokens: 30, completion_tokens: 7 } };
    if (tools === 1) return { toolCalls: [{ name: 'Bash', args: { command: 'cat a.txt' } }], usage: { prompt_tokens: 35, completion_tokens: 5 } };
    return { text: ['written'], usage: { prompt_tokens: 40, completion_tokens: 2 } };
  };
  const sid = await createSession(app);
  const sock = connect(app.url, { auth: { token: app.adminKey, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` }, transports: ['websocket'], reconnection: false, forceNew: true });
  t.teardown(() => sock.disconnect());
  await next(sock, 'connect', 30_000);
  const seen = record(sock);
  await subscribe(sock, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'write it' })).ok, true);
  await untilEnd(seen, sid, 30_000);
  await until('the run span exported', () => spans.some((s) => s.name === 'invoke_agent agentsvc'));

  t.match(paths[0], /^POST \/v1\/traces application\/json/, 'OTLP/HTTP to <endpoint>/v1/traces');
  const send = spans.find((s) => s.name === 'chat:send');
  t.ok(send, 'a span for the chat:send event');
  t.equal(send!.traceId, CALLER_TRACE, 'the handshake traceparent\'s trace is continued');
  t.equal(send!.parentSpanId, CALLER_SPAN, 'under the caller\'s span');
  const run = spans.find((s) => s.name === 'invoke_agent agentsvc')!;
  t.equal(run.parentSpanId, send!.spanId, 'the run is a child of the chat:send event');
  t.match(attrs(run), { 'gen_ai.operation.name': 'invoke_agent', 'agentsvc.session.id': sid, 'agentsvc.run.status': 'completed' });
  const mine = spans.filter((s) => s.traceId === CALLER_TRACE);
  const shown = tree(mine, CALLER_SPAN);
  t.comment(`trace ${CALLER_TRACE}\n${shown.join('\n')}`);
  t.same(
    tree(mine, run.spanId).sort(),
    ['chat fake-model', 'chat fake-model', 'chat fake-model', 'execute_tool Bash', 'execute_tool Write', 'sandbox exec'].sort(),
    'three model calls, both tool calls and the sandbox command under the run',
  );
  const modelSpans = spans.filter((s) => s.parentSpanId === run.spanId && s.name.startsWith('chat '));
  // OTLP's SPAN_KIND_CLIENT is 3: a call to a remote model server, as the GenAI conventions say.
  t.same(modelSpans.map((s: any) => s.kind), [3, 3, 3], 'model calls are CLIENT spans');
  const calls = modelSpans.map(attrs);
  t.same(calls.map((c) => c['gen_ai.provider.name']), ['openai', 'openai', 'openai'], 'the provider of an OpenAI-compatible endpoint');
  t.match(calls, [
    { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'fake-model', 'gen_ai.response.model': 'fake-model', 'gen_ai.usage.input_tokens': '30', 'gen_ai.usage.output_tokens': '7' },
    { 'gen_ai.usage.input_tokens': '35', 'gen_ai.usage.output_tokens': '5' },
    { 'gen_ai.usage.input_tokens': '40', 'gen_ai.usage.output_tokens': '2' },
  ]);
  t.match(attrs(spans.find((s) => s.name === 'execute_tool Write')!), { 'gen_ai.tool.name': 'Write', 'agentsvc.tool.status': 'done' });
  const exec = spans.find((s) => s.name === 'sandbox exec')!;
  t.match(attrs(exec), { 'process.executable.name': 'cat', 'process.exit.code': '0' });
  t.notOk(JSON.stringify(exec).includes('a.txt'), 'the command line itself is not exported');
  const subscribeSpan = spans.find((s) => s.name === 'session:subscribe');
  t.equal(subscribeSpan?.traceId, CALLER_TRACE, 'every event of the connection continues the handshake\'s trace');
});

t.test('a sandbox command span carries the program name only, never a part of the line', async (t) => {
  const { spans, until } = await receiver(t);
  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) =>
    body.messages.some((m: any) => m.role === 'tool') ? { text: ['ran'] } : { toolCalls: [{ name: 'Bash', args: { command: 'TOKEN=secret curl x; "SECRET2" y' } }] };
  const sid = await createSession(app);
  const sock = connect(app.url, { auth: { token: app.adminKey }, transports: ['websocket'], reconnection: false, forceNew: true });
  t.teardown(() => sock.disconnect());
  await next(sock, 'connect', 30_000);
  const seen = record(sock);
  await subscribe(sock, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'run it' })).ok, true);
  await untilEnd(seen, sid, 30_000);
  await until('the sandbox exec span exported', () => spans.some((s) => s.name === 'sandbox exec'));
  const exec = spans.find((s) => s.name === 'sandbox exec')!;
  t.equal(attrs(exec)['process.executable.name'], 'curl', 'the program after the assignment');
  t.notOk(JSON.stringify(spans).toLowerCase().includes('secret'), 'no span carries the assignment or any other word of the line');
});

t.test('executableName: a plain program name or nothing', async (t) => {
  const cases: [string, string | undefined][] = [
    ['TOKEN=secret curl x', 'curl'],
    ['  A=1 B=two /usr/bin/git status', 'git'],
    ['cat a.txt', 'cat'],
    ['TOKEN="s e c" curl x', undefined],
    ["TOKEN='secret' curl x", undefined],
    ['TOKEN=a\\ b curl', undefined],
    ['TOKEN=$(cat k) curl', undefined],
    ['"secret" x', undefined],
    ['$SECRET x', undefined],
    ['secret;curl', undefined],
    ['TOKEN=secret', undefined],
    ['', undefined],
    ['echo\nsecret', undefined],
  ];
  for (const [line, want] of cases) t.equal(executableName(line), want, JSON.stringify(line));
});

t.test('a REST request is a span named by its route, continuing a traceparent header', async (t) => {
  const { spans, until } = await receiver(t);
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  const r = await app.api(`/api/sessions/${sid}`, { headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` } });
  t.equal(r.status, 200);
  t.equal((await app.api('/api/sessions/nope', { headers: { traceparent: 'garbage' } })).status, 404);
  t.equal((await app.api('/api/sessions', { key: 'wrong' })).status, 401);
  await until('three request spans', () => spans.filter((s) => s.name.startsWith('GET /api/sessions')).length >= 3);
  const got = spans.find((s) => s.traceId === CALLER_TRACE)!;
  t.equal(got.name, 'GET /api/sessions/:session_id', 'the route pattern, not the URL');
  t.equal(got.parentSpanId, CALLER_SPAN, 'under the caller\'s span');
  t.match(attrs(got), { 'http.request.method': 'GET', 'http.route': '/api/sessions/:session_id', 'http.response.status_code': '200' });
  const notFound = spans.find((s) => s.name === 'GET /api/sessions/:session_id' && s.traceId !== CALLER_TRACE)!;
  t.notOk(notFound.parentSpanId, 'a malformed traceparent starts a new trace');
  t.match(attrs(notFound), { 'http.response.status_code': '404' });
  t.ok(spans.some((s) => s.name === 'GET /api/sessions' && String(attrs(s)['http.response.status_code']) === '401'), 'a refused request has its span too');
});

t.test('traceparent parsing', async (t) => {
  t.same(parseTraceparent(`00-${CALLER_TRACE}-${CALLER_SPAN}-01`), { traceId: CALLER_TRACE, spanId: CALLER_SPAN, traceFlags: 1 });
  t.equal(parseTraceparent(`00-${'0'.repeat(32)}-${CALLER_SPAN}-01`), null, 'all-zero trace id');
  t.equal(parseTraceparent(`00-${CALLER_TRACE}-${'0'.repeat(16)}-01`), null, 'all-zero span id');
  t.equal(parseTraceparent('00-abc-def-01'), null);
  t.equal(parseTraceparent(42), null);
});

t.test('without OTEL_EXPORTER_OTLP_ENDPOINT nothing is started', async (t) => {
  const noop = { info() {}, warn() {}, error() {} } as never;
  t.equal(await startTracing(new Hooks(noop), noop, {}), null);
  t.equal(await startTracing(new Hooks(noop), noop, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }), null);
});
