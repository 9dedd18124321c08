import { defineModule } from '../../platform/lib/modules.js';
import { replayRoutes } from './routes.js';
import { Replays } from './service.js';

/** Replays of a session's runs. */
export const replayModule = defineModule({
  name: 'replay',
  needs: ['engine', 'events', 'sessions', 'chat'],
  start(ctx) {
    const { executor, turns } = ctx.get('engine');
    const replays = new Replays({ events: ctx.get('events').store, executor, turns, sessions: ctx.get('sessions'), runs: ctx.get('chat').runs, logger: ctx.logger });
    return { routes: [{ plugin: replayRoutes, opts: { replays } }] };
  },
});
