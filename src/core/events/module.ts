import { join } from 'node:path';
import type { EventBus } from '../../platform/infra/event-bus.js';
import { MemoryBus } from '../../platform/infra/event-bus.js';
import { RedisBus } from '../../platform/infra/redis-bus.js';
import { defineModule } from '../../platform/lib/modules.js';
import { EventStore } from './event-store.js';
import { EventLog } from './events.js';

export interface Events {
  /** Redis with REDIS_URL (events cross nodes), else in this process. */
  bus: EventBus;
  log: EventLog;
  store: EventStore;
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    events: Events;
  }
}

/** The session event stream: stored events, the bus between nodes (through the `events.bus` wraps) and the log on top of both. */
export const eventsModule = defineModule({
  name: 'events',
  needs: [],
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
    const log = new EventLog(store, ctx.hooks.wrap('events.bus', bus), { ttlHours: config.replayTtlHours, logger });
    return {
      provides: { bus, log, store },
      close: [
        { phase: 'infrastructure', name: 'event log', close: () => log.close() },
        { phase: 'infrastructure', name: 'event bus', close: () => bus.close() },
      ],
    };
  },
});
