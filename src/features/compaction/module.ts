import { issues, SessionRef } from '../../core/conversation/send-schema.js';
import { socketCommands } from '../../core/engine/socket.js';
import { contextWindowOf } from '../../platform/config/models.js';
import { defineModule } from '../../platform/lib/modules.js';
import { AppError } from '../../platform/server/errors.js';
import { Compactor } from './compactor.js';
import { compactionRoutes } from './routes.js';
import { CompactionService } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    compaction: CompactionService;
  }
}

/**
 * Compaction of a session's history: on request (REST, and the client event chat:compact) and
 * automatically past AGENTSVC_COMPACT_AT, before a model call (the run hook model.prepare).
 */
export const compactionModule = defineModule({
  name: 'compaction',
  needs: ['engine', 'sessions', 'agents'],
  start(ctx) {
    const { config, logger } = ctx;
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
    return {
      provides: compaction,
      routes: [{ plugin: compactionRoutes, opts: { compaction } }],
      hooks: [{ on: 'model.prepare', name: 'compaction.auto', run: ({ run, messages }) => compaction.auto(run, messages) }],
      sockets: [
        (socket) =>
          // chat:compact starts a compaction; its events follow on the session's stream.
          socketCommands(socket, { logger, maxMessageBytes: config.limits.socketMessage })('chat:compact', async (payload) => {
            const p = SessionRef.safeParse(payload);
            if (!p.success) throw new AppError(422, 'VALIDATION_ERROR', issues(p.error));
            const r = await compaction.start(socket.data.user.id, p.data.session_id);
            return r.started ? {} : { compaction_id: null, reason: r.reason };
          }),
      ],
    };
  },
});
