import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Hooks } from '../../src/chat/hooks.js';
import { startTracing } from '../../src/telemetry/traces.js';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/**
 * OTLP traces (CONTRACT 17) against an OTLP/HTTP receiver in this process: a chat with a tool call
 * gives one trace, a run span with a child per model call (GenAI attributes, token usage) and per
 * tool call. Without OTEL_EXPORTER_OTLP_ENDPOINT the SDK is not even loaded.
 */
t.setTimeout(120_000);

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

const attrs = (s: OtlpSpan) => Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]]));

t.test('a chat with a tool call is one trace: run, model calls, tool call', async (t) => {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      for (const rs of JSON.parse(body).resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => receiver.close());
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
  t.teardown(() => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  });

  const { app, model } = await buildWithModel(t);
  model.fallback = (body: any) =>
    body.messages.at(-1).role === 'tool'
      ? { text: ['written'], usage: { prompt_tokens: 40, completion_tokens: 2 } }
      : { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'hi\n' } }], usage: { prompt_tokens: 30, completion_tokens: 7 } };
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'write it' })).ok, true);
  await untilEnd(seen, sid, 30_000);
  const deadline = Date.now() + 15_000;
  while (!spans.some((s) => s.name === 'invoke_agent agentsvc') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));

  t.match(paths[0], /^POST \/v1\/traces application\/json/, 'OTLP/HTTP to <endpoint>/v1/traces');
  const run = spans.find((s) => s.name === 'invoke_agent agentsvc');
  t.ok(run, 'a run span');
  t.match(attrs(run!), { 'gen_ai.operation.name': 'invoke_agent', 'agentsvc.session.id': sid, 'agentsvc.run.status': 'completed' });
  const children = spans.filter((s) => s.parentSpanId === run!.spanId);
  t.same(children.map((s) => s.name).sort(), ['chat fake-model', 'chat fake-model', 'execute_tool Write'], 'two model calls and the tool call under the run');
  t.ok(children.every((s) => s.traceId === run!.traceId), 'one trace');
  const calls = children.filter((s) => s.name.startsWith('chat ')).map(attrs);
  t.match(calls, [
    { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'fake-model', 'gen_ai.response.model': 'fake-model', 'gen_ai.usage.input_tokens': '30', 'gen_ai.usage.output_tokens': '7' },
    { 'gen_ai.usage.input_tokens': '40', 'gen_ai.usage.output_tokens': '2' },
  ]);
  t.match(attrs(children.find((s) => s.name === 'execute_tool Write')!), { 'gen_ai.tool.name': 'Write', 'agentsvc.tool.status': 'done' });
});

t.test('without OTEL_EXPORTER_OTLP_ENDPOINT nothing is started', async (t) => {
  const noop = { info() {}, warn() {}, error() {} } as never;
  t.equal(await startTracing(new Hooks(noop), noop, {}), null);
  t.equal(await startTracing(new Hooks(noop), noop, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }), null);
});
