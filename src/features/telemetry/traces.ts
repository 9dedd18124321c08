/**
 * OTLP traces (docs/operations.md). Runs are read off the run engine's hooks (src/core/engine/hooks.ts), so the
 * loop has no tracing calls in it: one span per run, with a child per model call (GenAI semantic
 * conventions: operation, request and response model, token usage) and per tool call. The hooks
 * tell a model or tool call after it ended, with its start and duration, so those spans are made
 * with their own start and end times. Around them: a span per REST request (named by its route
 * pattern), per Socket.IO client event and per sandbox command. A W3C `traceparent` header, or
 * `auth.traceparent` in the Socket.IO handshake, continues the caller's trace.
 *
 * Parents travel in an AsyncLocalStorage (the context manager below): a `chat:send` handler runs
 * inside its event's span, the run started from it takes that span as parent and makes itself the
 * context of what the run does next, so a sandbox command of a tool call lands in the same trace.
 *
 * The OpenTelemetry SDK is loaded only when OTEL_EXPORTER_OTLP_ENDPOINT (or the traces-only
 * variable) is set: without it nothing is loaded, no hook is added and nothing is exported. The
 * exporter reads the other standard OTEL_* variables itself.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context, ContextManager, Span } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Computer, Runner } from '../../../runners/types.js';
import type { Hooks, RunInfo } from '../../core/engine/hooks.js';
import type { Logger } from '../../platform/lib/logger.js';
import type { AppServer } from '../../platform/server/gateway.js';

export interface Tracing {
  /** A fastify plugin (unencapsulated): a span per REST request. */
  rest: (app: FastifyInstance) => Promise<void>;
  /** A span per client event on every socket of `io`, under the handshake's traceparent. */
  sockets(io: AppServer): void;
  /** The runner with a span per command its computers run. */
  runner(runner: Runner): Runner;
  close(): Promise<void>;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C traceparent's trace and span ids (version 00; all-zero ids are invalid), or null. */
export function parseTraceparent(value: unknown): { traceId: string; spanId: string; traceFlags: number } | null {
  const m = typeof value === 'string' ? TRACEPARENT.exec(value.trim().toLowerCase()) : null;
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return null;
  return { traceId: m[1], spanId: m[2], traceFlags: Number.parseInt(m[3], 16) & 1 };
}

/** OpenTelemetry's context manager on one AsyncLocalStorage (the SDK's own lives in a package we do not ship). */
class AlsContextManager implements ContextManager {
  readonly als = new AsyncLocalStorage<Context>();
  constructor(private readonly root: Context) {}
  active(): Context {
    return this.als.getStore() ?? this.root;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.als.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...a: unknown[]) => unknown;
    return ((...a: unknown[]) => this.with(ctx, () => fn(...a))) as unknown as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.als.disable();
    return this;
  }
}

const runAttributes = (run: RunInfo) => ({
  'gen_ai.operation.name': 'invoke_agent',
  'gen_ai.request.model': run.model,
  'agentsvc.run.id': run.runId,
  'agentsvc.session.id': run.sessionId,
  'agentsvc.user.id': run.userId,
  'agentsvc.run.origin': run.origin,
});

/**
 * `gen_ai.provider.name` of a model endpoint (OpenTelemetry GenAI conventions): the well-known
 * value for a known host, else `openai`: every endpoint is spoken to with the OpenAI API, which is
 * what OpenAI client instrumentations report whatever their base URL.
 */
export function providerName(baseUrl: string): string {
  let host: string;
  try {
    host = new URL(baseUrl).hostname.toLowerCase();
  } catch {
    return 'openai';
  }
  for (const [suffix, name] of PROVIDER_HOSTS) if (host === suffix || host.endsWith(`.${suffix}`)) return name;
  return 'openai';
}

const PROVIDER_HOSTS: [string, string][] = [
  ['openai.azure.com', 'azure.ai.openai'],
  ['services.ai.azure.com', 'azure.ai.inference'],
  ['api.openai.com', 'openai'],
  ['api.anthropic.com', 'anthropic'],
  ['api.deepseek.com', 'deepseek'],
  ['api.groq.com', 'groq'],
  ['api.mistral.ai', 'mistral_ai'],
  ['api.perplexity.ai', 'perplexity'],
  ['api.x.ai', 'x_ai'],
  ['generativelanguage.googleapis.com', 'gcp.gemini'],
  ['aiplatform.googleapis.com', 'gcp.vertex_ai'],
  ['api.cohere.com', 'cohere'],
];

export async function startTracing(hooks: Hooks, logger: Logger, env: NodeJS.ProcessEnv = process.env, provider: (model: string) => string = () => 'openai'): Promise<Tracing | null> {
  if (!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) || env.OTEL_SDK_DISABLED === 'true') return null;
  const [{ trace, context, SpanKind, SpanStatusCode, ROOT_CONTEXT }, { BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const tracerProvider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'agentsvc' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const tracer = tracerProvider.getTracer('agentsvc');
  const contexts = new AlsContextManager(ROOT_CONTEXT);
  context.setGlobalContextManager(contexts);
  /** The context a caller's traceparent names (remote parent), or the root. */
  const remote = (traceparent: unknown) => {
    const sc = parseTraceparent(traceparent);
    return sc ? trace.setSpanContext(ROOT_CONTEXT, { ...sc, isRemote: true }) : ROOT_CONTEXT;
  };
  const runs = new Map<string, Span>();
  const under = (runId: string) => {
    const parent = runs.get(runId);
    return parent ? trace.setSpan(context.active(), parent) : undefined;
  };
  const offs = [
    hooks.on('run.started', ({ run }) => {
      // Told synchronously from the run's start, inside whatever started it (a chat:send event, a
      // REST request): that is its parent, and the run's span is the context of what follows.
      const span = tracer.startSpan('invoke_agent agentsvc', { attributes: runAttributes(run) }, context.active());
      runs.set(run.runId, span);
      contexts.als.enterWith(trace.setSpan(context.active(), span));
    }),
    hooks.on('model.call', (c) => {
      const span = tracer.startSpan(
        `chat ${c.model}`,
        {
          // A call to a remote model server: CLIENT, as the GenAI conventions say.
          kind: SpanKind.CLIENT,
          startTime: c.startedAt,
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': provider(c.model),
            'gen_ai.request.model': c.run.model,
            'gen_ai.response.model': c.model,
            'gen_ai.usage.input_tokens': c.usage.input_tokens,
            'gen_ai.usage.output_tokens': c.usage.output_tokens,
            'agentsvc.model.outcome': c.outcome,
            ...(c.ttftMs === null ? {} : { 'agentsvc.model.ttft_ms': c.ttftMs }),
          },
        },
        under(c.run.runId),
      );
      if (c.outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: c.error });
      span.end(new Date(c.startedAt.getTime() + c.durationMs));
    }),
    hooks.on('tool.call', (c) => {
      const end = Date.now();
      const span = tracer.startSpan(
        `execute_tool ${c.tool}`,
        {
          startTime: new Date(end - c.durationMs),
          attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': c.tool, 'gen_ai.tool.call.id': c.callId, 'agentsvc.tool.status': c.status },
        },
        under(c.run.runId),
      );
      if (c.status === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(end);
    }),
    hooks.on('run.ended', ({ run, status, finish_reason }) => {
      const span = runs.get(run.runId);
      if (!span) return;
      runs.delete(run.runId);
      span.setAttributes({ 'agentsvc.run.status': status, 'gen_ai.response.finish_reasons': [finish_reason] });
      if (status === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, message: finish_reason });
      span.end();
    }),
  ];
  const failed = (span: Span, e: unknown) => span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
  const traceComputer = (kind: string, c: Computer): Computer => {
    const exec: Computer['exec'] = async (command, opts) => {
      const program = executableName(command);
      const attributes: Record<string, string> = { 'agentsvc.runner.kind': kind, 'agentsvc.user.id': c.userId };
      if (program) attributes['process.executable.name'] = program;
      const span = tracer.startSpan('sandbox exec', { attributes }, context.active());
      try {
        const r = await c.exec(command, opts);
        span.setAttributes({ 'process.exit.code': r.exitCode ?? -1, 'agentsvc.exec.timed_out': r.timedOut, 'agentsvc.exec.aborted': r.aborted });
        if (r.exitCode !== 0) span.setStatus({ code: SpanStatusCode.ERROR, message: r.timedOut ? 'timed out' : `exit ${r.exitCode ?? r.signal}` });
        return r;
      } catch (e) {
        failed(span, e);
        throw e;
      } finally {
        span.end();
      }
    };
    return Object.assign(Object.create(c) as Computer, { exec });
  };
  const rest = fp(
    async (app: FastifyInstance) => {
      const spans = new WeakMap<object, Span>();
      const nameOf = (method: string, route: string | undefined) => `${method} ${route ?? 'unmatched'}`;
      // A callback hook: `done` runs the rest of the request inside the store entered here.
      app.addHook('onRequest', (req, _reply, done) => {
        const route = req.routeOptions.url;
        const span = tracer.startSpan(
          nameOf(req.method, route),
          { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method, ...(route ? { 'http.route': route } : {}) } },
          remote(req.headers.traceparent),
        );
        spans.set(req, span);
        contexts.als.enterWith(trace.setSpan(context.active(), span));
        done();
      });
      app.addHook('onResponse', async (req, reply) => {
        const span = spans.get(req);
        if (!span) return;
        span.setAttribute('http.response.status_code', reply.statusCode);
        if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      });
    },
    { name: 'traces' },
  );
  logger.info({ endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT }, 'exporting traces over OTLP/HTTP');
  return {
    rest,
    sockets(io) {
      io.on('connection', (socket) => {
        const parent = remote((socket.handshake.auth as { traceparent?: unknown } | undefined)?.traceparent);
        socket.use((packet, next) => {
          const event = String(packet[0]);
          // Names from the catalogue only: a client may send any event name.
          const known = socket.eventNames().includes(event);
          const span = tracer.startSpan(known ? event : 'unknown event', { kind: SpanKind.SERVER, attributes: { 'agentsvc.socket.event': known ? event : 'unknown', 'agentsvc.user.id': socket.data.user?.id ?? '' } }, parent);
          const ack = packet.at(-1);
          if (typeof ack === 'function') {
            packet[packet.length - 1] = (reply: unknown) => {
              const r = reply as { ok?: boolean; error?: { code?: string } } | null;
              if (r && r.ok === false) span.setStatus({ code: SpanStatusCode.ERROR, message: r.error?.code });
              span.end();
              ack(reply);
            };
          }
          // The handler runs on a tick scheduled from here: it inherits the event's context.
          contexts.with(trace.setSpan(parent, span), next);
          if (typeof ack !== 'function') span.end();
        });
      });
    },
    runner(r) {
      return {
        kind: r.kind,
        setPathPolicy: (p) => r.setPathPolicy(p),
        check: () => r.check(),
        acquire: async (userId) => traceComputer(r.kind, await r.acquire(userId)),
        reset: (userId) => r.reset(userId),
        version: (userId) => r.version(userId),
        upgrade: (userId) => r.upgrade(userId),
        close: () => r.close(),
      };
    },
    close: async () => {
      for (const off of offs) off();
      for (const span of runs.values()) span.end();
      runs.clear();
      // Flushes what is batched, bounded: a collector that is away must not hold up shutdown.
      await Promise.race([tracerProvider.shutdown(), new Promise((r) => setTimeout(r, 5000).unref())]);
      context.disable();
    },
  };
}

/** A leading assignment whose value is plain text (no quoting, escapes or expansions). */
const PLAIN_ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9._,:/@%+-]*$/;
/** A program: a plain word, or a path of plain words. */
const PLAIN_PROGRAM = /^(?:[A-Za-z0-9._+-]*\/)*([A-Za-z0-9_][A-Za-z0-9._+-]{0,99})$/;

/**
 * The program a command line runs, for the `process.executable.name` attribute: the first word
 * after leading plain assignments (`A=1 curl x` gives `curl`), when it is a plain word or path
 * (its last part). Anything else (a quoted or escaped word, an expansion, an assignment whose value
 * is not plain, `TOKEN="a b" curl`) gives undefined and the attribute is left out: a command line
 * may carry secrets, so no part of it but a plain program name is ever exported.
 */
export function executableName(command: string): string | undefined {
  const words = command.trim().split(/[ \t]+/);
  let i = 0;
  while (i < words.length && PLAIN_ASSIGNMENT.test(words[i])) i++;
  const m = PLAIN_PROGRAM.exec(words[i] ?? '');
  return m?.[1] || undefined;
}
