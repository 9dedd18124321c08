/**
 * The service's Prometheus metrics (docs/operations.md), on prom-client (the maintained Node client:
 * text exposition format, histograms, default process metrics with event-loop lag), registered in
 * a registry of our own so tests and several services in one process never share counters.
 *
 * Run and tool figures are read off the session events this node publishes (observeBus): the
 * event stream already says when a run starts and ends, when its first delta comes and how each
 * tool call ended, so the loop needs no extra calls to be measured. Model figures (retries,
 * fallbacks, cost: not in the events) come from the model hooks, after each call (observeModels).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Hooks } from '../../core/engine/hooks.js';
import type { Runner } from '../../../runners/types.js';
import { type EventBus, emittedAt, type SessionEvent } from '../../platform/infra/event-bus.js';

export interface MetricsSources {
  /** Open Socket.IO connections of this node. */
  sockets?: () => number;
  /** The database pool: connections in use, idle, and requests waiting for one. */
  pool?: () => { total: number; idle: number; waiting: number } | null;
  /** Scheduled jobs: due and not taken yet (install-wide), and being handled by this node. */
  jobs?: () => Promise<{ waiting: number; active: number } | null>;
  /**
   * Whether a tool name is one the service registered (the builtin and module tools). Only those
   * become `tool` label values; any other name (a provider's, or one the model made up) is
   * counted as `other`, so no model output can grow the series. Without it every name is `other`.
   */
  registeredTool?: (name: string) => boolean;
}

/** Event delivery lag: milliseconds matter (a socket's stream), so finer at the low end. */
const LAG_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/**
 * HTTP durations by area (the route template's first segment under /api), with a handful of
 * buckets: a histogram per route template was 84 KiB of a 102 KiB scrape once ~95 routes had
 * answered (docs/monitoring.md). Counts stay per route template.
 */
const HTTP_SECONDS = [0.005, 0.025, 0.1, 0.5, 2.5, 10];
/** Notice codes that are label values; any other counts as `other` (docs/socket-protocol.md). */
const NOTICE_CODES = new Set(['BUDGET_WARNING', 'RUN_LIMIT', 'LOOP_DETECTED', 'TOOLS_DEFERRED', 'TOOL_SEARCH']);
/** `/api/sessions/:id/files` -> `sessions`; `/metrics` -> `metrics`; no route -> `unmatched`. */
export function httpArea(route: string | undefined): string {
  if (!route) return 'unmatched';
  const parts = route.split('/').filter(Boolean);
  return (parts[0] === 'api' ? parts[1] : parts[0]) ?? 'root';
}
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Bounds on what is remembered between two events of a run (runs and tool calls in flight). */
const MAX_OPEN = 10_000;

interface OpenRun {
  started: number;
  firstDelta: boolean;
}

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'area'>;
  private readonly notices: Counter<'code'>;
  private readonly runsStarted: Counter<'mode'>;
  private readonly runsEnded: Counter<'status' | 'finish_reason'>;
  private readonly runDuration: Histogram<'status'>;
  private readonly firstDelta: Histogram;
  private readonly modelCalls: Counter<'model' | 'outcome' | 'purpose'>;
  private readonly modelRetries: Counter<'model'>;
  private readonly modelFallbacks: Counter<'model' | 'from'>;
  private readonly tokens: Counter<'model' | 'direction'>;
  private readonly cost: Counter<'model'>;
  private readonly toolCalls: Counter<'tool' | 'status'>;
  private readonly toolDuration: Histogram<'tool'>;
  private readonly events: Counter<'event'>;
  private readonly approvals: Counter<'action'>;
  private readonly runLimits: Counter<'limit'>;
  private readonly webhookDeliveries: Counter<'event' | 'outcome'>;
  private readonly sandboxStart: Histogram<'runner' | 'outcome'>;
  private readonly deliveryLag: Histogram<'origin'>;
  private readonly lagLocal: Histogram.Internal<'origin'>;
  private readonly lagRemote: Histogram.Internal<'origin'>;
  private readonly eventCounts = new Map<string, Counter.Internal>();
  /** Events this node published (the others reached it from other nodes). */
  private readonly published = new WeakSet<SessionEvent>();
  private readonly runs = new Map<string, OpenRun>();
  private readonly tools = new Map<string, string>();

  /** Where the gauges read from; the sockets and jobs sources come once those exist (observeSockets, observeJobs). */
  private readonly sources: MetricsSources;

  constructor(initial: MetricsSources = {}) {
    const sources: MetricsSources = { ...initial };
    this.sources = sources;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'agentsvc_' });
    // Gauges named like counters, which promtool's lint refuses; the rest of the defaults (CPU,
    // memory, heap, event-loop lag, GC) stay.
    for (const name of ['active_handles', 'active_requests', 'active_resources']) {
      this.registry.removeSingleMetric(`agentsvc_nodejs_${name}`);
      this.registry.removeSingleMetric(`agentsvc_nodejs_${name}_total`);
    }
    this.httpRequests = new Counter({ name: 'agentsvc_http_requests_total', help: 'HTTP requests by route template and status', labelNames: ['method', 'route', 'status'], registers });
    this.httpDuration = new Histogram({ name: 'agentsvc_http_request_duration_seconds', help: 'HTTP request duration by area: the first segment of the route template under /api (sessions, files, admin, ...)', labelNames: ['area'], buckets: HTTP_SECONDS, registers });
    new Gauge({
      name: 'agentsvc_sockets_open',
      help: 'Open Socket.IO connections',
      registers,
      collect() {
        this.set(sources.sockets?.() ?? 0);
      },
    });
    for (const [key, help] of [
      ['total', 'Database pool connections'],
      ['idle', 'Idle database pool connections'],
      ['waiting', 'Queries waiting for a database connection'],
    ] as const) {
      new Gauge({
        name: `agentsvc_db_pool_${key === 'total' ? 'connections' : key}`,
        help,
        registers,
        collect() {
          const p = sources.pool?.();
          if (p) this.set(p[key]);
        },
      });
    }
    for (const key of ['waiting', 'active'] as const) {
      new Gauge({
        name: `agentsvc_jobs_${key}`,
        help: key === 'waiting' ? 'Scheduled job occurrences due and not taken by any node yet (install-wide)' : 'Scheduled job occurrences this node is handling',
        registers,
        async collect() {
          // A database that does not answer leaves the gauge as it was; the scrape still succeeds.
          const c = await sources.jobs?.().catch(() => null);
          if (c) this.set(c[key]);
        },
      });
    }
    this.sandboxStart = new Histogram({ name: 'agentsvc_sandbox_start_duration_seconds', help: "Getting a user's sandbox ready for a command (a start when none runs, a lookup otherwise), by runner and outcome (ok, error)", labelNames: ['runner', 'outcome'], buckets: SECONDS, registers });
    this.deliveryLag = new Histogram({ name: 'agentsvc_event_delivery_lag_seconds', help: "From a session event's emission on the node running the session to its delivery to this node's subscribers, by origin (local, remote: another node through Redis)", labelNames: ['origin'], buckets: LAG_SECONDS, registers });
    this.lagLocal = this.deliveryLag.labels('local');
    this.lagRemote = this.deliveryLag.labels('remote');
    const runs = this.runs;
    new Gauge({
      name: 'agentsvc_runs_active',
      help: 'Runs of this node between chat:start and chat:end',
      registers,
      collect() {
        this.set(runs.size);
      },
    });
    this.runsStarted = new Counter({ name: 'agentsvc_runs_started_total', help: 'Runs started (chat:start)', labelNames: ['mode'], registers });
    this.runsEnded = new Counter({ name: 'agentsvc_runs_ended_total', help: 'Runs ended (chat:end) by status and finish_reason', labelNames: ['status', 'finish_reason'], registers });
    this.runDuration = new Histogram({ name: 'agentsvc_run_duration_seconds', help: 'From chat:start to chat:end', labelNames: ['status'], buckets: SECONDS, registers });
    this.firstDelta = new Histogram({ name: 'agentsvc_time_to_first_delta_seconds', help: 'From chat:start to the first text, thinking or tool call of the run', buckets: SECONDS, registers });
    // Model figures come from the model hooks (observeModels): every call, compactions' included.
    // Their `model` label is bounded: an id of the models config, else `other`.
    this.modelCalls = new Counter({ name: 'agentsvc_model_calls_total', help: 'Model calls by the model that answered, outcome (ok, error, aborted) and purpose (turn, compaction)', labelNames: ['model', 'outcome', 'purpose'], registers });
    this.modelRetries = new Counter({ name: 'agentsvc_model_retries_total', help: 'Requests of model calls beyond their first (retries before the first delta and fallbacks), by the model asked for', labelNames: ['model'], registers });
    this.modelFallbacks = new Counter({ name: 'agentsvc_model_fallbacks_total', help: 'Model calls answered by a fallback, by the model that answered and the model asked for', labelNames: ['model', 'from'], registers });
    this.tokens = new Counter({ name: 'agentsvc_model_tokens_total', help: 'Tokens of model calls by model and direction (input, output, cached_input: part of input)', labelNames: ['model', 'direction'], registers });
    this.cost = new Counter({ name: 'agentsvc_model_cost_total', help: "Cost of model calls from the models config's price table (its currency), by model; calls of a model without a price add nothing", labelNames: ['model'], registers });
    this.toolCalls = new Counter({ name: 'agentsvc_tool_calls_total', help: 'Tool calls by tool and final status', labelNames: ['tool', 'status'], registers });
    this.toolDuration = new Histogram({ name: 'agentsvc_tool_call_duration_seconds', help: 'Tool call duration', labelNames: ['tool'], buckets: SECONDS, registers });
    this.events = new Counter({ name: 'agentsvc_events_published_total', help: 'Session events published by this node', labelNames: ['event'], registers });
    this.approvals = new Counter({ name: 'agentsvc_approvals_total', help: 'Tool policy decisions by action (allowed, denied, asked, approved, rejected)', labelNames: ['action'], registers });
    this.notices = new Counter({ name: 'agentsvc_notices_total', help: 'system:notice events by code (BUDGET_WARNING: a budget passed 80%; RUN_LIMIT; LOOP_DETECTED; TOOLS_DEFERRED; TOOL_SEARCH; other)', labelNames: ['code'], registers });
    this.runLimits = new Counter({ name: 'agentsvc_run_limits_total', help: 'Runs ended by a ceiling or the loop detector (seconds, tool_calls, loop)', labelNames: ['limit'], registers });
    this.webhookDeliveries = new Counter({
      name: 'agentsvc_webhook_deliveries_total',
      help: 'Webhook delivery attempts by event and outcome (delivered; failed: retried later; given_up: failed for 24 h, dropped)',
      labelNames: ['event', 'outcome'],
      registers,
    });
  }

  /**
   * Model calls, retries, fallbacks, tokens and cost from the model hooks (docs/operations.md), with the
   * `model` label one of `models` (the configured ids) or `other`, so that no caller can grow the
   * series. Returns the listeners' removal.
   */
  /** Read the open sockets gauge from this server (once it listens). */
  observeSockets(io: { engine: { clientsCount: number } }): void {
    this.sources.sockets = () => io.engine.clientsCount;
  }

  /** Read the scheduled jobs gauges from the scheduler. */
  observeJobs(jobs: () => Promise<{ waiting: number; active: number }>): void {
    this.sources.jobs = jobs;
  }

  observeModels(hooks: Hooks, models: Iterable<string>): () => void {
    const known = new Set(models);
    const label = (id: string | undefined) => (id && known.has(id) ? id : 'other');
    const offs = [
      hooks.on('model.call', (c) => {
        const model = label(c.model);
        this.modelCalls.inc({ model, outcome: c.outcome, purpose: c.purpose ?? 'turn' });
        const asked = c.fallbackFrom ?? c.model;
        if (c.attempts > 1) this.modelRetries.inc({ model: label(asked) }, c.attempts - 1);
        if (c.fallbackFrom) this.modelFallbacks.inc({ model, from: label(c.fallbackFrom) });
      }),
      // Tokens and cost as the usage module recorded them (its cost from the price table).
      hooks.on('model.usage', (u) => {
        const model = label(u.model);
        if (u.input_tokens) this.tokens.inc({ model, direction: 'input' }, u.input_tokens);
        if (u.output_tokens) this.tokens.inc({ model, direction: 'output' }, u.output_tokens);
        if (u.cached_input_tokens) this.tokens.inc({ model, direction: 'cached_input' }, u.cached_input_tokens);
        if (u.cost) this.cost.inc({ model }, u.cost);
      }),
    ];
    return () => {
      for (const off of offs) off();
    };
  }

  /** One decision of the tool policy (docs/policy.md). */
  approval(action: string): void {
    this.approvals.inc({ action });
  }

  /** A run ended by a ceiling or the loop detector (src/features/run-limits): three label values. */
  runLimit(limit: 'seconds' | 'tool_calls' | 'loop'): void {
    this.runLimits.inc({ limit });
  }

  /** One webhook delivery attempt (src/features/webhooks): `event` is one of the webhook events or webhook.test. */
  webhookDelivery(event: string, outcome: 'delivered' | 'failed' | 'given_up'): void {
    this.webhookDeliveries.inc({ event, outcome });
  }

  /** One HTTP request answered: `route` is fastify's route template (`unmatched` for a 404 of no route). */
  http(method: string, route: string | undefined, status: number, seconds: number): void {
    const r = route ?? 'unmatched';
    this.httpRequests.inc({ method, route: r, status: String(status) });
    this.httpDuration.observe({ area: httpArea(route) }, seconds);
  }

  /** One session event published by this node. */
  event(ev: SessionEvent, now = performance.now()): void {
    // The shapes of docs/socket-protocol.md; only the fields read here.
    const p = ev.payload as unknown as {
      session_id: string;
      mode?: string;
      status?: string;
      finish_reason?: string;
      patch_type?: string;
      data: { id: string; tool_name?: string; tool_call_id: string; status?: string; duration_ms?: number };
    };
    this.eventCount(ev.name).inc();
    const sid = p.session_id;
    switch (ev.name) {
      case 'chat:start':
        if (this.runs.size >= MAX_OPEN) this.runs.delete(this.runs.keys().next().value!);
        this.runs.set(sid, { started: now, firstDelta: false });
        this.runsStarted.inc({ mode: String(p.mode ?? 'executing') });
        return;
      case 'system:notice': {
        const code = String((ev.payload as { code?: unknown }).code);
        this.notices.inc({ code: NOTICE_CODES.has(code) ? code : 'other' });
        return;
      }
      case 'chat:end': {
        const status = String(p.status);
        this.runsEnded.inc({ status, finish_reason: String(p.finish_reason ?? 'none') });
        const run = this.runs.get(sid);
        if (run) this.runDuration.observe({ status }, (now - run.started) / 1000);
        this.runs.delete(sid);
        return;
      }
      case 'turn:patch': {
        const run = this.runs.get(sid);
        const kind = p.patch_type;
        if (run && !run.firstDelta && (kind === 'add_content' || kind === 'add_thinking' || kind === 'add_tool_call')) {
          run.firstDelta = true;
          this.firstDelta.observe((now - run.started) / 1000);
        }
        if (kind === 'add_tool_call') {
          if (this.tools.size >= MAX_OPEN) this.tools.delete(this.tools.keys().next().value!);
          this.tools.set(p.data.id, this.toolLabel(p.data.tool_name));
        } else if (kind === 'tool_result') {
          const tool = this.tools.get(p.data.tool_call_id) ?? 'other';
          this.tools.delete(p.data.tool_call_id);
          this.toolCalls.inc({ tool, status: String(p.data.status) });
          if (typeof p.data.duration_ms === 'number') this.toolDuration.observe({ tool }, p.data.duration_ms / 1000);
        }
        return;
      }
    }
  }

  /** A tool's label value: its name when it is a registered tool, else `other` (bounded series). */
  private toolLabel(name: unknown): string {
    return typeof name === 'string' && this.sources.registeredTool?.(name) ? name : 'other';
  }

  /** The runner, with the time each acquire of a sandbox takes measured. */
  observeRunner(runner: Runner): Runner {
    const hist = this.sandboxStart;
    return new Proxy(runner, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (prop !== 'acquire') return typeof v === 'function' ? v.bind(target) : v;
        return async (userId: string) => {
          const end = hist.startTimer({ runner: target.kind });
          try {
            const c = await target.acquire(userId);
            end({ outcome: 'ok' });
            return c;
          } catch (e) {
            end({ outcome: 'error' });
            throw e;
          }
        };
      },
    });
  }

  /** One event delivered to this node's subscribers: its lag since emission. */
  delivered(ev: SessionEvent, now = Date.now()): void {
    const at = emittedAt.get(ev);
    // Clocks of two nodes may disagree a little: never a negative lag.
    if (at !== undefined) (this.published.has(ev) ? this.lagLocal : this.lagRemote).observe(Math.max(0, now - at) / 1000);
  }

  /** The events counter of one event name, labelled once (prom-client hashes labels on every call). */
  private eventCount(name: string) {
    let c = this.eventCounts.get(name);
    if (!c) this.eventCounts.set(name, (c = this.events.labels(name)));
    return c;
  }

  /**
   * The bus, with every event this node publishes measured on its way out, and every event that
   * reaches this node measured for its delivery lag (first subscriber: the lag to this node).
   */
  observeBus(bus: EventBus): EventBus {
    bus.subscribe((ev) => {
      try {
        this.delivered(ev);
      } catch {}
    });
    // A plain object, not a Proxy: `publish` is read once per event on the delta path.
    return {
      publish: (ev: SessionEvent) => {
        // Measuring must never cost a run its event.
        try {
          this.published.add(ev);
          this.event(ev);
        } catch {}
        bus.publish(ev);
      },
      subscribe: (fn) => bus.subscribe(fn),
      follow: (sessionId) => bus.follow(sessionId),
      signal: (sig) => bus.signal(sig),
      onSignal: (fn) => bus.onSignal(fn),
      healthy: () => bus.healthy(),
      close: () => bus.close(),
    };
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/** The database pool's figures, read from knex's pool (tarn) under MikroORM; null when not there. */
export function poolStats(knex: { client?: { pool?: TarnPool } }): () => { total: number; idle: number; waiting: number } | null {
  return () => {
    const pool = knex.client?.pool;
    if (!pool) return null;
    return { total: pool.numUsed() + pool.numFree(), idle: pool.numFree(), waiting: pool.numPendingAcquires() };
  };
}
