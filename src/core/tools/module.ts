import { defineModule } from '../../platform/lib/modules.js';
import { BackgroundTasks } from './background.js';
import { registerDefaultTools } from './defaults.js';
import { backgroundRoutes } from './routes.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    background: BackgroundTasks;
  }
}

/** The built-in tools and the background tasks some of them start. */
export const backgroundModule = defineModule({
  name: 'background',
  needs: [],
  start({ config, tools }) {
    const background = new BackgroundTasks(config.background);
    registerDefaultTools(tools, config, background);
    return {
      provides: background,
      hooks: [
        {
          on: 'session.deleted',
          run: async ({ sessionId, userId }) => {
            await background.stopSession(sessionId);
            await tools.endSession({ userId, sessionId });
          },
        },
      ],
      close: [{ phase: 'infrastructure', name: 'background tasks', close: () => background.close() }],
    };
  },
});

/** The background tasks routes of a session. */
export const toolRoutesModule = defineModule({
  name: 'toolRoutes',
  needs: ['sessions', 'background'],
  start: (ctx) => ({ routes: [{ plugin: backgroundRoutes, opts: { sessions: ctx.get('sessions'), background: ctx.get('background') } }] }),
});
