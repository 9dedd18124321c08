import type { Runner } from '../../../runners/types.js';
import { defineModule } from '../../platform/lib/modules.js';
import type { RouteModule } from '../../platform/server/app.js';
import { ModelStates } from './health.js';
import { requestContext, socketContext } from './log-context.js';
import { poolStats, ServiceMetrics } from './metrics.js';
import { metricsRoutes } from './routes.js';
import { providerName, startTracing, type Tracing } from './traces.js';
import { modelEntry } from '../../platform/config/models.js';

export interface Telemetry {
  metrics: ServiceMetrics;
  /** OTLP traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  tracing: Tracing | null;
  /** The models as their last call went (health). */
  modelStates: ModelStates;
  /** The request context (log lines name their request) and its span. */
  requestHook: RouteModule;
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    telemetry: Telemetry;
  }
}

/**
 * Metrics, traces and log context: listeners of the run hooks, and wraps of the runner (a span per
 * command, the time a computer takes to start) and of the event bus (events out, delivery lag).
 * It starts before the modules whose ports it wraps, which know nothing of it.
 */
export const telemetryModule = defineModule({
  name: 'telemetry',
  needs: ['users'],
  before: ['runner', 'events'],
  async start(ctx) {
    const { config, hooks, logger, db } = ctx;
    const tracing = await startTracing(hooks, logger, process.env, (model) => providerName(modelEntry(config.model, model).baseUrl));
    const modelStates = new ModelStates(hooks);
    const metrics = new ServiceMetrics({ pool: poolStats(db.orm.em.getConnection().getKnex()), registeredTool: (name) => ctx.tools.get(name) !== undefined });
    metrics.observeModels(hooks, [...config.model.models, ...config.model.entries.map((e) => e.id)]);
    return {
      provides: { metrics, tracing, modelStates, requestHook: { plugin: requestContext, opts: { inner: tracing ? { plugin: tracing.rest, opts: {} } : undefined } } },
      hooks: [
        ...(tracing ? [{ on: 'runner', name: 'telemetry.traces', before: ['telemetry.metrics'], run: (r: Runner) => tracing.runner(r) } as const] : []),
        { on: 'runner', name: 'telemetry.metrics', run: (r) => metrics.observeRunner(r) },
        { on: 'events.bus', name: 'telemetry.metrics', run: (bus) => metrics.observeBus(bus) },
      ],
      routes: [{ plugin: metricsRoutes, opts: { metrics, users: ctx.get('users'), token: config.metricsToken } }],
      jobs: [
        {
          name: 'socket telemetry',
          start: ({ io }) => {
            metrics.observeSockets(io);
            socketContext(io);
            tracing?.sockets(io);
          },
        },
      ],
      // After the runs and sockets: the runs' spans end before the exporter flushes.
      close: tracing ? [{ phase: 'infrastructure', name: 'traces', close: () => tracing.close() }] : [],
    };
  },
});
