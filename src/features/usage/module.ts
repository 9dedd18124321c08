import { defineModule } from '../../platform/lib/modules.js';
import { createUsage, type UsageModule } from './index.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    usage: UsageModule;
  }
}

/** Usage and budgets: listeners and gates of the run engine's hooks (src/features/usage/index.ts). */
export const usageModule = defineModule({
  name: 'usage',
  needs: ['solutions', 'sessions'],
  async start(ctx) {
    const { admin } = ctx.get('solutions');
    const sessions = ctx.get('sessions');
    const usage = await createUsage({
      config: ctx.config,
      db: ctx.db,
      hooks: ctx.hooks,
      logger: ctx.logger,
      isAdmin: (u) => admin.isAdmin(u),
      userExists: (u) => admin.userExists(u),
      ownSession: (u, s) => sessions.getOwned(u, s),
    });
    return {
      provides: usage,
      routes: [usage.routes],
      hooks: [{ on: 'run.ending', name: 'usage.chat-end', run: ({ run }) => ({ usage: usage.runUsage(run.runId) }) }],
      close: [{ phase: 'infrastructure', name: 'budgets', close: async () => usage.close() }],
    };
  },
});
