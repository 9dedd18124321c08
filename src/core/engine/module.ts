import { defineModule } from '../../platform/lib/modules.js';
import { ChatService } from './chat-service.js';
import { Conversation } from '../conversation/conversation.js';
import type { ModelPort } from '../models/port.js';
import { chatRoutes } from './routes.js';
import { RunExecutor } from './run-executor.js';
import { RunStore } from './run-store.js';
import { Runs } from './runs.js';
import { chatSocket } from './socket.js';
import { Subscriptions } from '../events/subscriptions.js';
import { TurnStore } from '../conversation/turn-store.js';
import { errField } from '../../platform/lib/logger.js';

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
    engine: Engine;
    chat: Chat;
  }
}

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
