import { contextWindowOf } from '../../platform/config/models.js';
import { defineModule } from '../../platform/lib/modules.js';
import { ToolSearch } from './search.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Tool search: many tools offered through `ToolSearch` (docs/tool-search.md). */
    toolSearch: ToolSearch;
  }
}

/** AGENTSVC_TOOLS_DIRECT_MAX: past it, or 10% of the context window, tools are searched (docs/tool-search.md). */
export const toolSearchModule = defineModule({
  name: 'toolSearch',
  needs: [],
  start(ctx) {
    const search = new ToolSearch({ directMax: ctx.config.toolSearch.directMax, contextWindow: (model) => contextWindowOf(ctx.config.model, model) });
    // A run's found tools are forgotten when it ends (a listener that needs no place among the others).
    ctx.hooks.on('run.ended', ({ run }) => search.forget(run));
    return {
      provides: search,
      hooks: [
        { on: 'model.tools', name: 'tool-search.offer', run: (p) => search.choose(p) },
        { on: 'model.tools.preview', name: 'tool-search.offer', run: (p) => search.preview(p) },
      ],
    };
  },
});
