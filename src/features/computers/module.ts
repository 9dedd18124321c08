import { defineModule } from '../../platform/lib/modules.js';
import { computerRoutes } from './routes.js';

/** The computers routes: a user's sandbox state, and clearing its memory (its background tasks). */
export const computersModule = defineModule({
  name: 'computers',
  needs: ['runner', 'sessions', 'background'],
  start(ctx) {
    const sessions = ctx.get('sessions');
    const background = ctx.get('background');
    const clearMemo = async (userId: string) => {
      let n = 0;
      for (const id of await sessions.idsOf(userId)) {
        n += background.list(id).length;
        await background.stopSession(id);
      }
      return n;
    };
    return { routes: [{ plugin: computerRoutes, opts: { runner: ctx.get('runner').runner, clearMemo } }] };
  },
});
