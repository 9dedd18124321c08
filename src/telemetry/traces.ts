/**
 * OTLP traces of runs (CONTRACT 17), read off the run engine's hooks (src/chat/hooks.ts), so the
 * loop has no tracing calls in it: one span per run, with a child per model call (GenAI semantic
 * conventions: operation, request and response model, token usage) and per tool call. The hooks
 * tell a model or tool call after it ended, with its start and duration, so those spans are made
 * with their own start and end times. The OpenTelemetry SDK is loaded only when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or the traces-only variable) is set: without it nothing is loaded
 * and nothing is exported. The exporter reads the other standard OTEL_* variables itself.
 */
import type { Span } from '@opentelemetry/api';
import type { Hooks, RunInfo } from '../chat/hooks.js';
import type { Logger } from '../lib/logger.js';

export interface Tracing {
  close(): Promise<void>;
}

const runAttributes = (run: RunInfo) => ({
  'gen_ai.operation.name': 'invoke_agent',
  'gen_ai.request.model': run.model,
  'agentsvc.run.id': run.runId,
  'agentsvc.session.id': run.sessionId,
  'agentsvc.user.id': run.userId,
  'agentsvc.run.origin': run.origin,
});

export async function startTracing(hooks: Hooks, logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) || env.OTEL_SDK_DISABLED === 'true') return null;
  const [{ trace, context, SpanStatusCode }, { BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'agentsvc' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const tracer = provider.getTracer('agentsvc');
  const runs = new Map<string, Span>();
  const under = (runId: string) => {
    const parent = runs.get(runId);
    return parent ? trace.setSpan(context.active(), parent) : undefined;
  };
  const offs = [
    hooks.on('run.started', ({ run }) => {
      runs.set(run.runId, tracer.startSpan('invoke_agent agentsvc', { attributes: runAttributes(run) }));
    }),
    hooks.on('model.call', (c) => {
      const span = tracer.startSpan(
        `chat ${c.model}`,
        {
          startTime: c.startedAt,
          attributes: {
            'gen_ai.operation.name': 'chat',
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
  logger.info({ endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT }, 'exporting traces over OTLP/HTTP');
  return {
    close: async () => {
      for (const off of offs) off();
      for (const span of runs.values()) span.end();
      runs.clear();
      // Flushes what is batched, bounded: a collector that is away must not hold up shutdown.
      await Promise.race([provider.shutdown(), new Promise((r) => setTimeout(r, 5000).unref())]);
    },
  };
}
