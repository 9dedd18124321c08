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

export interface Engine {
  turns: TurnStore;
  executor: RunExecutor;
  conversation: Conversation;
  model: ModelPort;
}

export interface Chat {
  chat: ChatService;
  runs: Runs;
  /** Which of this node's sockets watch which session (a feature ends those whose reader lost access). */
  subs: Subscriptions;
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
  needs: ['events', 'models'],
  async start(ctx) {
    const { config, db, logger, hooks } = ctx;
    const events = ctx.get('events');
    const turns = new TurnStore(db);
    const model = ctx.get('models');
    const executor = new RunExecutor({ config, store: new RunStore(db, { turns, events: events.store }, config.nodeStaleSeconds), events: events.store, log: events.log, turns, logger, hooks });
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

/**
 * chat:send and friends: the chat service, the runs API, subscriptions and the socket handler.
 * What features add to a run they contribute to the run hooks (src/core/engine/hook-catalogue.ts).
 */
export const chatModule = defineModule({
  name: 'chat',
  needs: ['engine', 'events', 'sessions', 'folders'],
  start(ctx) {
    const { config, logger, hooks, tools, prompt } = ctx;
    const { executor, conversation, turns, model } = ctx.get('engine');
    const events = ctx.get('events');
    const sessions = ctx.get('sessions');
    const chat = new ChatService({ config, executor, conversation, turns, model, tools, workspaces: ctx.get('folders'), prompt, hooks });
    const runs = new Runs(chat, hooks);
    const subs = new Subscriptions(
      events.log.bus,
      (sessionId, after, limit) => events.store.page(sessionId, after, limit),
      (sessionId) => conversation.turns(sessionId),
    );
    return {
      provides: { chat, runs, subs },
      routes: [{ plugin: chatRoutes, opts: { config, sessions, conversation, chat, tools, hooks } }],
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
        }),
      ],
      close: [{ phase: 'infrastructure', name: 'subscriptions', close: async () => subs.close() }],
    };
  },
});
