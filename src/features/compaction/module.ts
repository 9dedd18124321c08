import { contextWindowOf } from '../../platform/config/models.js';
import { defineModule } from '../../platform/lib/modules.js';
import { Compactor } from './compactor.js';
import { compactionRoutes } from './routes.js';
import { CompactionService } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    compaction: CompactionService;
  }
}

/** Compaction of a session's history: on request and automatically past AGENTSVC_COMPACT_AT. */
export const compactionModule = defineModule({
  name: 'compaction',
  needs: ['engine', 'sessions', 'agents'],
  start(ctx) {
    const { config } = ctx;
    const { executor, conversation, model } = ctx.get('engine');
    const tasks = ctx.get('agents');
    const compaction = new CompactionService({
      executor,
      sessions: ctx.get('sessions'),
      stored: (sessionId) => conversation.stored(sessionId),
      compactor: new Compactor({
        model,
        keepTurns: config.compaction.keepTurns,
        hooks: ctx.hooks,
        stored: (sessionId) => conversation.stored(sessionId),
        tasks: (sessionId) => tasks.list(sessionId),
      }),
      compactAt: config.compaction.at,
      contextWindow: (m) => contextWindowOf(config.model, m),
    });
    return { provides: compaction, routes: [{ plugin: compactionRoutes, opts: { compaction } }] };
  },
});
