import { join } from 'node:path';
import type { EventBus } from '../../platform/infra/event-bus.js';
import { MemoryBus } from '../../platform/infra/event-bus.js';
import { RedisBus } from '../../platform/infra/redis-bus.js';
import { defineModule } from '../../platform/lib/modules.js';
import { ChatService } from './chat-service.js';
import { Conversation } from '../conversation/conversation.js';
import { EventStore } from '../events/event-store.js';
import { EventLog } from '../events/events.js';
import type { ModelPort } from '../models/port.js';
import { chatRoutes } from './routes.js';
import { RunExecutor } from './run-executor.js';
import { RunStore } from './run-store.js';
import { Runs } from './runs.js';
import { chatSocket } from './socket.js';
import { Subscriptions } from '../events/subscriptions.js';
import { TurnStore } from '../conversation/turn-store.js';
import { errField } from '../../platform/lib/logger.js';

export interface Events {
  /** Redis with REDIS_URL (events cross nodes), else in this process. */
  bus: EventBus;
  log: EventLog;
  store: EventStore;
}

export interface Engine {
  turns: TurnStore;
  executor: RunExecutor;
  conversation: Conversation;
  model: ModelPort;
}

export interface Chat {
  chat: ChatService;
  runs: Runs;
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    events: Events;
    engine: Engine;
    chat: Chat;
  }
}

/** The session event stream: stored events, the bus between nodes and the log on top of both. */
export const eventsModule = defineModule({
  name: 'events',
  needs: ['telemetry'],
  async start(ctx) {
    const { config, logger, db } = ctx;
    const store = new EventStore(db);
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
        ctx.warnings.push(
          `REDIS_URL is set with the local runner and the workspaces in this node's own home (${config.workspaces}): ` +
            'other nodes do not see its files; set AGENTSVC_WORKSPACES to a folder on storage every node shares',
        );
      }
    }
    const log = new EventLog(store, ctx.get('telemetry').metrics.observeBus(bus), { ttlHours: config.replayTtlHours, logger });
    return {
      provides: { bus, log, store },
      close: [
        { phase: 'infrastructure', name: 'event log', close: () => log.close() },
        { phase: 'infrastructure', name: 'event bus', close: () => bus.close() },
      ],
    };
  },
});

/** The run engine: turns, the durable runs and their executor, the conversation a run reads. */
export const engineModule = defineModule({
  name: 'engine',
  needs: ['events', 'usage', 'models'],
  async start(ctx) {
    const { config, db, logger, hooks } = ctx;
    const events = ctx.get('events');
    const turns = new TurnStore(db);
    const model = ctx.get('models');
    const executor = new RunExecutor({ config, store: new RunStore(db, { turns, events: events.store }), events: events.store, log: events.log, turns, logger, hooks, runUsage: ctx.get('usage').runUsage });
    await executor.start();
    const conversation = new Conversation(turns, executor);
    return {
      provides: { turns, executor, conversation, model },
      close: [
        { phase: 'runs', name: 'runs', close: () => executor.close() },
        // What listeners do with the runs' ends (task and scheduled run records) before anything closes.
        { phase: 'runs', name: 'hook listeners', close: () => hooks.settled() },
      ],
    };
  },
});

/** chat:send and friends: the chat service, the runs API, subscriptions and the socket handler. */
export const chatModule = defineModule({
  name: 'chat',
  needs: ['engine', 'events', 'sessions', 'folders', 'policy', 'compaction', 'timetravel', 'memories'],
  start(ctx) {
    const { config, logger, hooks, tools, prompt } = ctx;
    const { executor, conversation, turns, model } = ctx.get('engine');
    const events = ctx.get('events');
    const sessions = ctx.get('sessions');
    const compaction = ctx.get('compaction');
    const timetravel = ctx.get('timetravel');
    const recall = ctx.get('memories');
    const chat = new ChatService({
      config,
      executor,
      conversation,
      turns,
      model,
      tools,
      workspaces: ctx.get('folders'),
      prompt,
      hooks,
      approvals: ctx.get('policy'),
      autoCompact: (state, messages) => compaction.auto(state, messages),
      whatif: { check: (u, s, w, m) => timetravel.checkWhatIf(u, s, w, m), fork: (u, s, w) => timetravel.forkWhatIf(u, s, w) },
      onUserTurn: (userId, sessionId, turn, text, canRecall) =>
        recall.onUserTurn(userId, sessionId, turn, text, canRecall).catch((e) => logger.error({ ...errField(e), session_id: sessionId }, 'could not recall memories')),
      checkpoint: (userId, sessionId, turn, text) =>
        timetravel.take(userId, sessionId, turn, text).catch((e) => logger.error({ ...errField(e), session_id: sessionId }, 'could not record a checkpoint')),
    });
    const runs = new Runs(chat, hooks);
    const subs = new Subscriptions(
      events.log.bus,
      (sessionId, after, limit) => events.store.page(sessionId, after, limit),
      (sessionId) => conversation.turns(sessionId),
    );
    return {
      provides: { chat, runs },
      routes: [{ plugin: chatRoutes, opts: { config, sessions, conversation, chat, tools } }],
      sockets: [
        chatSocket({
          chat,
          log: events.log,
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
        }),
      ],
      close: [{ phase: 'infrastructure', name: 'subscriptions', close: async () => subs.close() }],
    };
  },
});
