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
    return {
      provides: search,
      hooks: [
        { on: 'model.tools', name: 'tool-search.offer', run: (p) => search.choose(p) },
        { on: 'run.ended', name: 'tool-search.forget', run: ({ run }) => search.forget(run) },
      ],
    };
  },
});
