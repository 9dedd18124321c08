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

export const memoriesModule = defineModule({
  name: 'memories',
  needs: [],
  start({ db, config }) {
    const store = new MemoryStore(db);
    const recall = new Recall(db, store, config.memoryTopK);
    return { provides: recall, prompts: [recall.prompt], toolProviders: [recall.tools], routes: [{ plugin: memoryRoutes, opts: { store } }] };
  },
});
