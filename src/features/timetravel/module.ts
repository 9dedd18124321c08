import { errField } from '../../platform/lib/logger.js';
import { defineModule } from '../../platform/lib/modules.js';
import { timeTravelRoutes } from './routes.js';
import { TimeTravel } from './service.js';
import { Snapshots } from './snapshots.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    timetravel: TimeTravel;
  }
}

/** Checkpoints of a session's folder at each turn (run.opening), restores and what-if forks (whatif.check, whatif.fork). */
export const timetravelModule = defineModule({
  name: 'timetravel',
  needs: ['engine', 'sessions', 'background', 'quota'],
  start(ctx) {
    const { config, logger } = ctx;
    const background = ctx.get('background');
    const snapshots = new Snapshots(config.workspaces, { fileLimit: config.limits.snapshotFile, quota: ctx.get('quota') });
    const timetravel = new TimeTravel({
      db: ctx.db,
      turns: ctx.get('engine').turns,
      sessions: ctx.get('sessions'),
      logger,
      snapshots,
      checkpointKeep: config.retention.checkpointKeep,
      beforeRestore: async (sessionId) => {
        const n = background.list(sessionId).length;
        await background.stopSession(sessionId);
        return n;
      },
    });
    return {
      provides: timetravel,
      routes: [{ plugin: timeTravelRoutes, opts: { timetravel } }],
      hooks: [
        // A new message's checkpoint: of an empty session folder, stored by the run's claim; else
        // started beside the model call, done before the run's first tool and its end.
        { on: 'run.claim', name: 'timetravel.checkpoint', run: ({ userId, sessionId, turn, text }) => timetravel.withClaim(userId, sessionId, turn, text) },
        {
          on: 'run.opening',
          name: 'timetravel.checkpoint',
          before: ['memories.recall'],
          run: ({ run, turn, text, defer }) =>
            defer(timetravel.take(run.userId, run.sessionId, turn, text).catch((e) => logger.error({ ...errField(e), session_id: run.sessionId }, 'could not record a checkpoint'))),
        },
        { on: 'whatif.check', name: 'timetravel.whatif', run: ({ userId, sessionId, whatif, hasMessage }) => timetravel.checkWhatIf(userId, sessionId, whatif, hasMessage) },
        { on: 'whatif.fork', name: 'timetravel.whatif', run: ({ userId, sessionId, whatif }) => timetravel.forkWhatIf(userId, sessionId, whatif) },
        {
          name: 'timetravel.snapshots',
          on: 'session.deleted',
          run: ({ sessionId, userId }) =>
            snapshots.remove(userId, sessionId).catch((e) => logger.warn({ ...errField(e), session_id: sessionId }, 'could not remove the snapshots of a deleted session')),
        },
      ],
      close: [{ phase: 'infrastructure', name: 'snapshots', close: () => snapshots.close() }],
    };
  },
});
