import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Hooks } from './core/engine/hooks.js';
import type { ModelPort } from './core/models/port.js';
import type { EventLog } from './core/events/events.js';
import type { ChatService } from './core/engine/chat-service.js';
import type { RunExecutor } from './core/engine/run-executor.js';
import type { Runs } from './core/engine/runs.js';
import type { TurnStore } from './core/conversation/turn-store.js';
import { SystemPrompt, basePrompt, planningPrompt } from './core/engine/system-prompt.js';
import type { Config } from './platform/config/index.js';
import { openDatabase, type Database } from './platform/db/index.js';
import { openLogStream } from './platform/lib/log-file.js';
import { errField, keepServing, LateLogger } from './platform/lib/logger.js';
import { type Kernel, startModules } from './platform/lib/modules.js';
import { Shutdown } from './platform/lib/shutdown.js';
import { running, until } from './platform/db/pg-process.js';
import { type Collected, contribute, MODULES, PROMPT_ORDER, TOOL_ORDER } from './modules.js';
import type { FirstParty } from './features/plugin-host/first-party.js';
import type { PluginReport } from './features/plugin-host/loader.js';
import type { Production } from './features/production/module.js';
import type { Retention } from './features/retention/index.js';
import type { Scheduling } from './features/scheduling/index.js';
import { buildApp } from './platform/server/app.js';
import { closeGateway, createGateway, type AppServer } from './platform/server/gateway.js';
import type { Solutions } from './features/solutions/module.js';
import { logMixin } from './features/telemetry/log-context.js';
import type { BackgroundTasks } from './core/tools/background.js';
import { ToolRegistry } from './core/tools/registry.js';
import { bootstrapAdmin } from './features/users/bootstrap.js';
import type { UserService } from './features/users/service.js';
import type { Teams } from './features/teams/index.js';
import type { Runner } from '../runners/types.js';

/** Solutions, roles, admins, production agents and solutions (src/features/solutions, src/features/production). */
export type Business = Solutions & Production;

export interface Service {
  app: FastifyInstance;
  io: AppServer;
  db: Database;
  users: UserService;
  tools: ToolRegistry;
  executor: RunExecutor;
  chat: ChatService;
  prompt: SystemPrompt;
  turns: TurnStore;
  runner: Runner;
  background: BackgroundTasks;
  log: EventLog;
  scheduled: Scheduling;
  /** The daily retention sweep (AGENTSVC_RETENTION_DAYS, AGENTSVC_CHECKPOINT_KEEP). */
  retention: Retention;
  business: Business;
  teams: Teams;
  /** The run engine's seams: gates before model and tool calls, events after (src/core/engine/hooks.ts). */
  hooks: Hooks;
  /** Start runs and learn how they ended (src/core/engine/runs.ts). */
  runs: Runs;
  url: string;
  adminKeyCreated: boolean;
  warnings: string[];
  /** What `up` says after starting that is information, not a problem (e.g. shipped skills installed). */
  notes: string[];
  /** Plugins loaded and skipped at start (first-party and from AGENTSVC_PLUGINS). */
  plugins: PluginReport;
  /** The first-party plugins' own objects (skills library, MCP connections). */
  firstParty: FirstParty;
  close(): Promise<void>;
  /**
   * close(), bounded by `limitMs` (docs/operations.md, "Shutdown"): what is left near the limit is
   * stopped hard (kill()), early enough (2 s, or a quarter of a shorter limit) that it is gone by
   * the limit. Answers how it ended and, when hard, what it was still waiting on.
   */
  stop(limitMs: number): Promise<Stopped>;
  /**
   * Stops at once what would outlive this process: the runner's processes and the embedded
   * PostgreSQL (SIGKILL to its process group); resolves when the database is gone (`waitMs` at most).
   */
  kill(waitMs?: number): Promise<void>;
}

/** How a bounded shutdown ended: `failed` when a closer threw (each is logged), `hard` past the limit. */
export interface Stopped {
  outcome: 'clean' | 'failed' | 'hard';
  /** The closer (or `database`, `log`) still unfinished when the limit passed. */
  waiting?: string;
  failed: string[];
}

export interface StartOptions {
  /** Log to this file (default AGENTSVC_HOME/logs/agentsvc.log); false for none. */
  logFile?: string | false;
  /** An already open database (tests share one per file); the caller closes it. */
  db?: Database;
  /**
   * The database as the caller began to open it (`openDatabase` with `migrate`), owned by the
   * service from here: `up` starts the embedded PostgreSQL while the service's modules load.
   */
  opening?: Promise<Database>;
  /** Replace the model port (benchmarks measure the service without a model in between). */
  model?: ModelPort;
  /** Told each step of the start as it begins (`agentsvc up` prints them: docs/operations.md, "Start"). */
  progress?: (step: string) => void;
}

/** What the plugins step loaded, in one line. */
function pluginLine(r: PluginReport): string {
  const names = r.loaded.map((p) => p.name).join(', ');
  return `plugins: ${r.loaded.length} loaded${names ? ` (${names})` : ''}${r.failed.length ? `, ${r.failed.length} failed (${r.failed.map((f) => f.spec).join(', ')})` : ''}`;
}

/**
 * The composition root: the kernel every module is given, the modules (src/modules.ts) started in
 * dependency order, then the app from their routes and the gateway from their socket handlers.
 */
export async function startService(config: Config, opts: StartOptions = {}): Promise<Service> {
  mkdirSync(join(config.home, 'logs'), { recursive: true, mode: 0o700 });
  const logger = new LateLogger();
  const progress = opts.progress ?? (() => {});
  const db = opts.db ?? (await (opts.opening ?? openDatabase(config, { migrate: true, progress })));
  const shutdown = new Shutdown((name, e) => logger.error({ ...errField(e), closer: name }, 'closing failed'));
  let endLog = async () => {};
  const removeLastResort = keepServing(logger);
  let stage: string | null = null;
  const closeAll = async () => {
    await shutdown.run();
    stage = 'database';
    if (!opts.db) await db.close();
    removeLastResort();
    stage = 'log';
    await endLog();
    stage = null;
  };
  try {
    let started = false;
    const prompt = new SystemPrompt(logger);
    prompt.add(basePrompt);
    prompt.add(planningPrompt);
    prompt.order(PROMPT_ORDER);
    const tools = new ToolRegistry(logger);
    tools.order(TOOL_ORDER);
    const kernel: Kernel = { config, logger, db, hooks: new Hooks(logger), tools, prompt, warnings: [], notes: [], model: opts.model, started: () => started };
    const collected: Collected = { routes: [], sockets: [], jobs: [] };
    progress(`starting ${MODULES.length} modules`);
    const modules = await startModules(MODULES, kernel, shutdown, (m, out) => {
      contribute(kernel, out, collected);
      if (m.name === 'runner') progress(`${config.runner.kind} runner ready`);
      if (m.name === 'plugins') progress(pluginLine((out.provides as unknown as { report: PluginReport }).report));
    });
    // Every contribution is in: a hook ordered against a name nobody contributes, or in a cycle, stops the start here.
    kernel.hooks.seal();
    const get = modules.get;
    const users = get('users');
    const admin = await bootstrapAdmin(config.home, users);
    const logFile = opts.logFile ?? join(config.home, 'logs', 'agentsvc.log');
    const logStream = logFile ? openLogStream(logFile, config.logMaxBytes) : null;
    // Closed after everything else (the last closers still log), as the database is.
    endLog = logStream ? () => new Promise<void>((done) => logStream.end(() => done())) : endLog;
    progress('building the REST API and its OpenAPI document');
    // Keys, and sign-ins with the provider, with the role table as the gate (src/features/identity).
    const auth = get('identity');
    const app = await buildApp({
      config,
      users: auth,
      health: () => get('diagnostics').check(),
      logger: logStream ? { level: config.logLevel, stream: logStream, mixin: logMixin } : false,
      requestHook: get('telemetry').requestHook,
      routes: collected.routes,
    });
    logger.bind(app.log);
    await app.listen({ host: config.host, port: config.port });
    const io = createGateway(app.server, { config, users: auth, logger, modules: collected.sockets });
    shutdown.add('clients', 'sockets', () => closeGateway(io));
    shutdown.add('clients', 'http', () => app.close());
    // Jobs start in module order and stop in reverse, each in its phase (intake unless it says).
    for (const job of [...collected.jobs].reverse()) if (job.stop) shutdown.add(job.phase ?? 'intake', job.name, job.stop);
    progress(`starting ${collected.jobs.length} background jobs (${collected.jobs.map((j) => j.name).join(', ')})`);
    for (const job of collected.jobs) await job.start({ app, io });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    started = true;
    const { executor, turns } = get('engine');
    const { chat, runs } = get('chat');
    const plugins = get('plugins');
    let closing: Promise<void> | null = null;
    const close = () => (closing ??= closeAll());
    const kill = async (waitMs = 2000) => {
      void get('runner')
        .runner.close()
        .catch(() => {});
      const pid = opts.db ? 0 : (db.embedded?.kill() ?? 0);
      if (pid) await until(() => !running(pid, 'postgres'), waitMs, 20);
    };
    const stop = async (limitMs: number): Promise<Stopped> => {
      const grace = Math.min(2000, limitMs / 4);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), limitMs - grace)));
      const done = await Promise.race([close().then(() => 'done' as const), late]);
      clearTimeout(timer);
      if (done === 'done') return { outcome: shutdown.failed.length ? 'failed' : 'clean', failed: [...shutdown.failed] };
      const waiting = shutdown.current ?? stage ?? undefined;
      logger.error({ waiting, limit_ms: limitMs }, 'shutdown passed its limit; stopping hard');
      await kill(grace);
      return { outcome: 'hard', waiting, failed: [...shutdown.failed] };
    };
    return {
      app,
      io,
      db,
      users,
      tools: kernel.tools,
      executor,
      chat,
      prompt,
      turns,
      runner: get('runner').runner,
      background: get('background'),
      log: get('events').log,
      scheduled: get('scheduling'),
      retention: get('retention'),
      business: { ...get('solutions'), ...get('production') },
      teams: get('teams'),
      hooks: kernel.hooks,
      runs,
      url: `http://${host}:${port}`,
      adminKeyCreated: admin.created,
      warnings: kernel.warnings,
      notes: kernel.notes,
      plugins: plugins.report,
      firstParty: plugins.firstParty,
      close,
      stop,
      kill,
    };
  } catch (e) {
    await closeAll();
    throw e;
  }
}
