import type { Config } from '../../platform/config/index.js';
import type { BackgroundTasks } from './background.js';
import { createBashTool } from './bash.js';
import { fileTools } from './files/index.js';
import type { ToolRegistry } from './registry.js';
import { createSearchBackend, createWebFetchTool, createWebSearchTool } from './web/index.js';

/** The first-party tools; WebSearch only when a search backend is configured. */
export function registerDefaultTools(registry: ToolRegistry, config: Config, background: BackgroundTasks) {
  for (const t of fileTools) registry.register(t);
  registry.register(createBashTool({ defaultTimeoutMs: config.limits.bashTimeoutMs, background }));
  registry.register(createWebFetchTool({ allowPrivate: config.web.allowPrivate }));
  const search = createSearchBackend({ backend: config.web.searchBackend, url: config.web.searchUrl, apiKey: config.web.searchApiKey });
  if (search) registry.register(createWebSearchTool(search));
}
