import { errField } from '../../platform/lib/logger.js';
import { defineModule } from '../../platform/lib/modules.js';
import { Recall } from './recall.js';
import { memoryRoutes } from './routes.js';
import { MemoryStore } from './store.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Memories recalled into a session's prompt at each user turn. */
    memories: Recall;
  }
}

/** Memories: recalled at a new message's run.opening, offered as tools, listed in the prompt. */
export const memoriesModule = defineModule({
  name: 'memories',
  needs: ['sessions', 'engine'],
  start(ctx) {
    const { db, config, logger } = ctx;
    const store = new MemoryStore(db);
    const recall = new Recall(ctx.get('sessions'), ctx.get('engine').turns, store, config.memoryTopK);
    return {
      provides: recall,
      prompts: [recall.prompt],
      toolProviders: [recall.tools],
      routes: [{ plugin: memoryRoutes, opts: { store } }],
      // Awaited before the model is called: the prompt carries what it chose.
      hooks: [
        {
          on: 'run.opening',
          name: 'memories.recall',
          run: ({ run, turn, text, recall: canRecall }) =>
            recall.onUserTurn(run.userId, run.sessionId, turn, text, canRecall).catch((e) => logger.error({ ...errField(e), session_id: run.sessionId }, 'could not recall memories')),
        },
      ],
    };
  },
});
