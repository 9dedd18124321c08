import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config/index.js';
import { openDatabase, type Database } from './db/index.js';
import { buildApp } from './server/app.js';
import { createGateway, type AppServer } from './server/gateway.js';
import { watchRevocations } from './users/revocations.js';
import { userRoutes } from './users/routes.js';
import { storageQuota } from './files/quota.js';
import { ModelStates } from './telemetry/health.js';
import { startTracing } from './telemetry/traces.js';
import { bootstrapAdmin } from './users/bootstrap.js';
import { UserService } from './users/service.js';
import { SessionService } from './sessions/service.js';
import { sessionRoutes } from './sessions/routes.js';
import { EventLog } from './chat/events.js';
import { Hooks } from './chat/hooks.js';
import { Runs } from './chat/runs.js';
import { EventStore } from './chat/event-store.js';
import { MemoryBus } from './infra/event-bus.js';
import { RedisBus } from './infra/redis-bus.js';
import { TurnStore } from './chat/turn-store.js';
import type { ModelPort } from './chat/model.js';
import { ModelRouter } from './models/router.js';
import { createUsage } from './usage/index.js';
import { ToolRegistry } from './tools/registry.js';
import { removeSessionFolder, Workspaces } from './files/workspace.js';
import { createRunner } from '../runners/index.js';
import type { Runner } from '../runners/types.js';
import { BackgroundTasks } from './tools/background.js';
import { registerDefaultTools } from './tools/defaults.js';
import { backgroundRoutes } from './tools/routes.js';
import { computerRoutes } from './computers/routes.js';
import { askUserQuestionTool } from './agents/question.js';
import { agentTool } from './agents/fork.js';
import { TaskStore, createTaskTools, taskRoutes } from './agents/tasks.js';
import { loadPlugins, type PluginCheck, type PluginReport } from './plugins/loader.js';
import { type FirstParty, firstPartyPlugins } from './plugins/first-party.js';
import { pluginChecks } from './plugins/checks.js';
import { skillRoutes } from './skills/routes.js';
import { registryRoutes } from './registry/routes.js';
import { RunExecutor } from './chat/run-executor.js';
import { RunStore } from './chat/run-store.js';
import { ChatService } from './chat/chat-service.js';
import { createScheduling, type Scheduling } from './scheduling/index.js';
import { createRetention, type Retention } from './retention/index.js';
import { Snapshots } from './timetravel/snapshots.js';
import { TimeTravel } from './timetravel/service.js';
import { timeTravelRoutes } from './timetravel/routes.js';
import { tokenizeRoutes } from './tokenize/routes.js';
import { Compactor } from './compaction/compactor.js';
import { CompactionService } from './compaction/service.js';
import { contextWindowOf } from './config/models.js';
import { compactionRoutes } from './compaction/routes.js';
import { MemoryStore } from './memories/store.js';
import { Recall } from './memories/recall.js';
import { memoryRoutes } from './memories/routes.js';
import { settingsRoutes } from './settings/routes.js';
import { envRoutes } from './settings/env-routes.js';
import { sharingRoutes } from './sharing/routes.js';
import { ShareLinkStore } from './sharing/store.js';
import { portabilityRoutes } from './portability/routes.js';
import { Replays } from './replay/service.js';
import { replayRoutes } from './replay/routes.js';
import { SystemPrompt, basePrompt, planningPrompt } from './chat/system-prompt.js';
import { errField, LateLogger, keepServing } from './lib/logger.js';
import { Subscriptions } from './chat/subscriptions.js';
import { chatSocket } from './chat/socket.js';
import { chatRoutes } from './chat/routes.js';
import { Conversation } from './chat/conversation.js';
import { fileRoutes } from './files/routes.js';
import { diagnosticsModule } from './diagnostics/routes.js';
import { createBusiness, type Business } from './production/index.js';
import { appRoutes } from './apps/routes.js';
import { annotationRoutes } from './annotations/routes.js';
import { frontendConfigRoutes } from './frontend-config/routes.js';
import { gisRoutes } from './gis/routes.js';
import { createWorkspaces, type Teams } from './workspaces/index.js';
import { logMixin, requestContext, socketContext } from './telemetry/log-context.js';
import { poolStats, ServiceMetrics } from './telemetry/metrics.js';
import { openLogStream } from './lib/log-file.js';
import { Shutdown } from './lib/shutdown.js';
import { metricsRoutes } from './telemetry/routes.js';
import { PolicyService } from './policy/service.js';
import { policyRoutes } from './policy/routes.js';

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
  /** Solutions, roles, admins, production agents and solutions (src/production/index.ts). */
  business: Business;
  teams: Teams;
  /** The run engine's seams: gates before model and tool calls, events after (src/chat/hooks.ts). */
  hooks: Hooks;
  /** Start runs and learn how they ended (src/chat/runs.ts). */
  runs: Runs;
  url: string;
  adminKeyCreated: boolean;
  warnings: string[];
  /** Plugins loaded and skipped at start (first-party and from AGENTSVC_PLUGINS). */
  plugins: PluginReport;
  /** The first-party plugins' own objects (skills library, MCP connections). */
  firstParty: FirstParty;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Log to this file (default AGENTSVC_HOME/logs/agentsvc.log); false for none. */
  logFile?: string | false;
  /** An already open database (tests share one per file). */
  db?: Database;
  /** Replace the model port (benchmarks measure the service without a model in between). */
  model?: ModelPort;
}

/** The composition root: builds every adapter once and passes it down. */
export async function startService(config: Config, opts: StartOptions = {}): Promise<Service> {
  mkdirSync(join(config.home, 'logs'), { recursive: true, mode: 0o700 });
  const warnings: string[] = [];
  const logger = new LateLogger();
  const db = opts.db ?? (await openDatabase(config, { migrate: true }));
  const shutdown = new Shutdown((name, e) => logger.error({ ...errField(e), closer: name }, 'closing failed'));
  let endLog = async () => {};
  const removeLastResort = keepServing(logger);
  try {
    const users = new UserService(db.em);
    const hooks = new Hooks(logger);
    storageQuota.limit = config.userQuotaBytes;
    const tracing = await startTracing(hooks, logger);
    const modelStates = new ModelStates(hooks);
    // Last to close: the runs' spans end before the exporter flushes.
    if (tracing) shutdown.add('infrastructure', 'traces', () => tracing.close());
    const sessions = new SessionService(db.em, {
      hooks,
      removeFolder: (userId, sessionId) => removeSessionFolder(config.workspaces, userId, sessionId), defaultModel: config.model.default, models: config.model.models, memoryEnabled: config.memoryEnabled });
    const events = new EventStore(db);
    let lastRedisWarning = 0;
    const bus = config.redisUrl
      ? new RedisBus(config.redisUrl, (e) => {
          // ioredis reports every reconnect attempt: one line per 30 s is enough.
          if (Date.now() - lastRedisWarning < 30_000) return;
          lastRedisWarning = Date.now();
          logger.warn({ err: e.message }, 'redis event bus unreachable; reconnecting (events do not cross nodes meanwhile)');
        })
      : new MemoryBus();
    if (bus instanceof RedisBus) {
      const timeout = new Promise((_, fail) => setTimeout(() => fail(new Error(`REDIS_URL: Redis did not answer within 10 s`)), 10_000).unref());
      await Promise.race([bus.connected(), timeout]).catch(async (e) => {
        await bus.close();
        throw e;
      });
      if (config.runner.kind === 'local' && config.workspaces === join(config.home, 'workspaces')) {
        warnings.push(
          `REDIS_URL is set with the local runner and the workspaces in this node's own home (${config.workspaces}): ` +
            'other nodes do not see its files; set AGENTSVC_WORKSPACES to a folder on storage every node shares',
        );
      }
    }
    // The gateway is made after the app listens; the gauge reads it once it is there.
    const gateway: { io?: { engine: { clientsCount: number } } } = {};
    // So is the scheduler (made later): the jobs gauges read it once it is there.
    const later: { jobs?: () => Promise<{ waiting: number; active: number }> } = {};
    const metrics = new ServiceMetrics({
      sockets: () => gateway.io?.engine.clientsCount ?? 0,
      pool: poolStats(db.orm.em.getConnection().getKnex()),
      jobs: async () => (later.jobs ? later.jobs() : null),
    });
    metrics.observeModels(hooks, [...config.model.models, ...config.model.entries.map((e) => e.id)]);
    const log = new EventLog(events, metrics.observeBus(bus), { ttlHours: config.replayTtlHours, logger });
    shutdown.add('infrastructure', 'event log', () => log.close());
    shutdown.add('infrastructure', 'event bus', () => bus.close());
    const turns = new TurnStore(db);
    const model = opts.model ?? new ModelRouter(config.model);
    const created =
      config.runner.kind === 'docker'
        ? createRunner('docker', {
            home: config.home,
            workspaces: config.workspaces,
            image: config.runner.image,
            dockerHost: config.runner.dockerHost,
            memoryBytes: config.runner.memoryBytes,
            nanoCpus: config.runner.nanoCpus,
            pidsLimit: config.runner.pidsLimit,
            idleStopMs: config.runner.idleMs,
            network: config.runner.network,
          })
        : createRunner('local', { home: config.home, workspaces: config.workspaces, network: config.runner.network, allowUnconfined: config.runner.allowUnconfined });
    const runner = metrics.observeRunner(tracing ? tracing.runner(created) : created);
    shutdown.add('infrastructure', 'runner', () => runner.close());
    const check = await runner.check();
    if (check.warning) warnings.push(check.warning);
    if (check.error) warnings.push(`${config.runner.kind} runner unavailable: ${check.error} (runs that use tools will fail until it is back)`);
    const background = new BackgroundTasks(config.background);
    shutdown.add('infrastructure', 'background tasks', () => background.close());
    const tools = new ToolRegistry(logger);
    shutdown.add('infrastructure', 'tools', () => tools.close());
    registerDefaultTools(tools, config, background);
    const tasks = new TaskStore(db);
    for (const t of [askUserQuestionTool, agentTool, ...createTaskTools(tasks)]) tools.register(t);
    const prompt = new SystemPrompt(logger);
    prompt.add(basePrompt);
    prompt.add(planningPrompt);
    const workspaces = new Workspaces(config.workspaces, runner);
    const pluginHost = { registry: tools, prompt, checks: [] as PluginCheck[], workspaces, closers: [] as (() => Promise<unknown>)[] };
    shutdown.add('infrastructure', 'plugins', async () => {
      for (const c of pluginHost.closers) await c().catch((e) => logger.error(errField(e), 'a plugin failed to close'));
    });
    const firstParty = firstPartyPlugins(config);
    // Plugin lines are `up` warnings while starting, then lines of the service log.
    let started = false;
    const pluginLog = (m: string) => (started ? logger.warn({ source: 'plugin' }, m) : void warnings.push(m));
    const plugins = await loadPlugins([...firstParty.entries, ...config.plugins], pluginHost, config, pluginLog, config.pluginOptions);
    const business = createBusiness({ config, db, runner, workspaces, sessions, tools, prompt, users });
    warnings.push(...business.warnings);
    const clearMemo = async (userId: string) => {
      let n = 0;
      for (const id of await sessions.idsOf(userId)) {
        n += background.list(id).length;
        await background.stopSession(id);
      }
      return n;
    };
    const usage = await createUsage({
      config,
      db,
      hooks,
      logger,
      isAdmin: (u) => business.admin.isAdmin(u),
      userExists: (u) => business.admin.userExists(u),
      ownSession: (u, s) => sessions.getOwned(u, s),
    });
    shutdown.add('infrastructure', 'budgets', async () => usage.close());
    const executor = new RunExecutor({ config, store: new RunStore(db, { turns, events }), events, log, turns, logger, hooks, runUsage: usage.runUsage });
    await executor.start();
    shutdown.add('runs', 'runs', () => executor.close());
    // What listeners do with the runs' ends (task and scheduled run records) before anything closes.
    shutdown.add('runs', 'hook listeners', () => hooks.settled());
    const conversation = new Conversation(turns, executor);
    const policy = await PolicyService.create({ db, install: config.policy, logger, count: (a) => metrics.approval(a), roleRules: (id) => business.roles.policy(id) });
    policy.attach(hooks);
    hooks.on('session.unshared', ({ sessionId }) => new ShareLinkStore(db).revokeAll(sessionId));
    const memories = new MemoryStore(db);
    const recall = new Recall(db, memories, config.memoryTopK);
    prompt.add(recall.prompt);
    tools.addProvider(recall.tools);
    const snapshots = new Snapshots(config.workspaces, { fileLimit: config.limits.snapshotFile });
    shutdown.add('infrastructure', 'snapshots', () => snapshots.close());
    hooks.on('session.deleted', async ({ sessionId: id, userId }) => {
      await background.stopSession(id);
      await tools.endSession({ userId, sessionId: id });
      await snapshots.remove(userId, id).catch((e) => logger.warn({ ...errField(e), session_id: id }, 'could not remove the snapshots of a deleted session'));
    });
    const timetravel = new TimeTravel({
      db,
      turns,
      sessions,
      logger,
      snapshots,
      beforeRestore: async (sessionId) => {
        const n = background.list(sessionId).length;
        await background.stopSession(sessionId);
        return n;
      },
    });
    const compaction = new CompactionService({
      executor,
      sessions,
      stored: (sessionId) => conversation.stored(sessionId),
      compactor: new Compactor({
        model,
        keepTurns: config.compaction.keepTurns,
        hooks,
        stored: (sessionId) => conversation.stored(sessionId),
        tasks: (sessionId) => tasks.list(sessionId),
      }),
      compactAt: config.compaction.at,
      contextWindow: (m) => contextWindowOf(config.model, m),
    });
    const chat = new ChatService({
      config,
      executor,
      conversation,
      turns,
      model,
      tools,
      workspaces,
      prompt,
      hooks,
      approvals: policy,
      autoCompact: (state, messages) => compaction.auto(state, messages),
      whatif: { check: (u, s, w, m) => timetravel.checkWhatIf(u, s, w, m), fork: (u, s, w) => timetravel.forkWhatIf(u, s, w) },
      onUserTurn: (userId, sessionId, turn, text, canRecall) =>
        recall.onUserTurn(userId, sessionId, turn, text, canRecall).catch((e) => logger.error({ ...errField(e), session_id: sessionId }, 'could not recall memories')),
      checkpoint: (userId, sessionId, turn, text) =>
        timetravel.take(userId, sessionId, turn, text).catch((e) => logger.error({ ...errField(e), session_id: sessionId }, 'could not record a checkpoint')),
    });
    const runs = new Runs(chat, hooks);
    const scheduled = await createScheduling({
      db,
      logger,
      models: config.model.models,
      redisUrl: config.redisUrl,
      pollMs: config.schedulerPollMs,
      sessions,
      runs,
      hooks,
      conversation,
    });
    later.jobs = () => scheduled.jobCounts();
    shutdown.add('intake', 'scheduler', () => scheduled.close());
    const teams = createWorkspaces({ db, logger, sessions, runs, hooks, chat, conversation, prodAgents: business.prodAgents, catalog: business.catalog });
    shutdown.add('intake', 'task runs', () => teams.close());
    const subs = new Subscriptions(
      log.bus,
      (sessionId, after, limit) => events.page(sessionId, after, limit),
      (sessionId) => conversation.turns(sessionId),
    );
    const admin = await bootstrapAdmin(config.home, users);
    const logFile = opts.logFile ?? join(config.home, 'logs', 'agentsvc.log');
    const logStream = logFile ? openLogStream(logFile, config.logMaxBytes) : null;
    // Closed after everything else (the last closers still log), as the database is.
    endLog = logStream ? () => new Promise<void>((done) => logStream.end(() => done())) : endLog;
    const app = await buildApp({
      config,
      users,
      health: async () => {
        const database = await db
          .sql('select 1')
          .then(() => 'ok' as const, () => 'down' as const);
        const checks: Record<string, 'ok' | 'down'> = { database };
        if (config.redisUrl) checks.redis = bus.healthy() ? 'ok' : 'down';
        // Last known, never probed here: the runner as checked at start, models as their last call went.
        checks.runner = check.error ? 'down' : 'ok';
        Object.assign(checks, modelStates.checks());
        return { ok: database === 'ok', degraded: Object.values(checks).includes('down'), checks };
      },
      logger: logStream ? { level: config.logLevel, stream: logStream, mixin: logMixin } : false,
      requestHook: { plugin: requestContext, opts: { inner: tracing ? { plugin: tracing.rest, opts: {} } : undefined } },
      routes: [
        { plugin: userRoutes, opts: { users, storage: async (id: string) => ({ used_bytes: await storageQuota.used({ root: config.workspaces, user: id }), quota_bytes: storageQuota.limit }) } },
        { plugin: sessionRoutes, opts: { config, sessions } },
        { plugin: chatRoutes, opts: { config, sessions, conversation, chat, tools } },
        { plugin: fileRoutes, opts: { config, sessions } },
        { plugin: backgroundRoutes, opts: { sessions, background } },
        { plugin: computerRoutes, opts: { runner, clearMemo } },
        { plugin: taskRoutes, opts: { sessions, tasks } },
        scheduled.routes,
        { plugin: timeTravelRoutes, opts: { timetravel } },
        { plugin: tokenizeRoutes, opts: { defaultModel: config.model.default } },
        { plugin: compactionRoutes, opts: { compaction } },
        { plugin: memoryRoutes, opts: { store: memories } },
        { plugin: settingsRoutes, opts: { db } },
        { plugin: sharingRoutes, opts: { config, db, turns, sessions } },
        { plugin: portabilityRoutes, opts: { config, db, sessions } },
        { plugin: envRoutes, opts: { config } },
        { plugin: replayRoutes, opts: { replays: new Replays({ db, executor, turns, sessions, runs, logger }) } },
        ...business.routes,
        { plugin: appRoutes, opts: { config, db, sessions } },
        { plugin: annotationRoutes, opts: { db } },
        { plugin: frontendConfigRoutes, opts: { home: config.home } },
        { plugin: gisRoutes, opts: { sessions } },
        ...teams.routes,
        diagnosticsModule(config, {
          database: () => db.sql('select 1'),
          runner: () => runner.check(),
          redis: () => (config.redisUrl ? bus.healthy() : null),
          model: { baseUrl: config.model.baseUrl, apiKey: config.model.apiKey },
          searchBackend: config.web.searchBackend,
        }, pluginChecks(pluginHost.checks, tools)),
        { plugin: registryRoutes, opts: { config, firstParty, plugins: () => plugins, solutions: () => business.catalog.list() } },
        { plugin: skillRoutes, opts: { config, sessions, conversation, library: firstParty.skills, toolsChanged: () => tools.changed() } },
        { plugin: metricsRoutes, opts: { metrics, users, token: config.metricsToken } },
        { plugin: policyRoutes, opts: { policy, sessions, isAdmin: (u: string) => business.admin.isAdmin(u), userExists: (u: string) => business.admin.userExists(u) } },
        usage.routes,
      ],
    });
    logger.bind(app.log);
    await app.listen({ host: config.host, port: config.port });
    const io = createGateway(app.server, {
      config,
      users,
      logger,
      modules: [chatSocket({
          chat,
          log,
          logger,
          sessions,
          subs,
          maxMessageBytes: config.limits.socketMessage,
          maxPendingBytes: config.limits.socketBuffer,
          maxSubscriptions: config.chat.subscriptionsPerSocket,
          conversation,
          compact: async (userId, sessionId) => {
            const r = await compaction.start(userId, sessionId);
            return r.started ? { started: true as const } : { compaction_id: null, reason: r.reason };
          },
        }),],
    });
    gateway.io = io;
    socketContext(io);
    tracing?.sockets(io);
    shutdown.add('clients', 'sockets', () => io.close());
    shutdown.add('clients', 'http', () => app.close());
    shutdown.add('infrastructure', 'subscriptions', async () => subs.close());
    await scheduled.start();
    teams.start();
    const retention = createRetention({ db, sessions, logger, days: config.retention.days, checkpointKeep: config.retention.checkpointKeep });
    retention.start();
    shutdown.add('intake', 'retention', () => retention.close());
    const listener = await watchRevocations(io, users, db.url, (m) => app.log.warn(m));
    shutdown.add('infrastructure', 'revocation listener', () => listener.close());
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;

    started = true;
    let closing: Promise<void> | null = null;
    return {
      app,
      io,
      db,
      users,
      tools,
      executor,
      chat,
      prompt,
      turns,
      runner,
      background,
      log,
      scheduled,
      retention,
      business,
      teams,
      hooks,
      runs,
      url: `http://${host}:${port}`,
      adminKeyCreated: admin.created,
      warnings,
      plugins,
      firstParty,
      close: () =>
        (closing ??= (async () => {
          await shutdown.run();
          if (!opts.db) await db.close();
          removeLastResort();
          await endLog();
        })()),
    };
  } catch (e) {
    await shutdown.run();
    if (!opts.db) await db.close();
    removeLastResort();
    await endLog();
    throw e;
  }
}
