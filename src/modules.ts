import type { FastifyInstance } from 'fastify';
import type { HookContribution, Hooks } from './core/engine/hooks.js';
import type { ModelPort } from './core/models/port.js';
import type { PromptContributor, SystemPrompt } from './core/engine/system-prompt.js';
import type { Config } from './platform/config/index.js';
import type { Database } from './platform/db/index.js';
import type { Logger } from './platform/lib/logger.js';
import type { Module, Started } from './platform/lib/modules.js';
import type { Phase } from './platform/lib/shutdown.js';
import type { RouteModule } from './platform/server/app.js';
import type { AppServer, SocketModule } from './platform/server/gateway.js';
import type { ToolRegistry } from './core/tools/registry.js';
import type { Tool, ToolProvider, ToolScope } from './core/tools/types.js';
import { adminModule } from './features/admin/module.js';
import { agentsModule, sessionTasksModule } from './core/agent-tools/module.js';
import { annotationsModule } from './features/annotations/module.js';
import { appsModule } from './features/apps/module.js';
import { chatModule, engineModule } from './core/engine/module.js';
import { eventsModule } from './core/events/module.js';
import { compactionModule } from './features/compaction/module.js';
import { computersModule } from './features/computers/module.js';
import { diagnosticsModule } from './features/diagnostics/module.js';
import { doorsModule } from './features/doors/module.js';
import { mcpDoorModule } from './features/mcp-door/module.js';
import { agUiModule } from './features/ag-ui/module.js';
import { egressModule, egressPolicyModule } from './features/egress/module.js';
import { filesModule, foldersModule, quotaModule } from './core/files/module.js';
import { frontendConfigModule } from './features/frontend-config/module.js';
import { gisModule } from './features/gis/module.js';
import { memoriesModule } from './features/memories/module.js';
import { modelsModule } from './core/models/module.js';
import { modelKeysModule } from './features/model-keys/module.js';
import { pluginsModule } from './features/plugin-host/module.js';
import { policyModule } from './features/policy/module.js';
import { portabilityModule } from './features/portability/module.js';
import { productionModule } from './features/production/module.js';
import { registryModule } from './features/registry/module.js';
import { replayModule } from './features/replay/module.js';
import { retentionModule } from './features/retention/module.js';
import { runLimitsModule } from './features/run-limits/module.js';
import { schedulingModule } from './features/scheduling/module.js';
import { inboxModule } from './features/inbox/module.js';
import { webhooksModule } from './features/webhooks/module.js';
import { sessionsModule } from './core/sessions/module.js';
import { settingsModule } from './features/user-settings/module.js';
import { sharingModule } from './features/sharing/module.js';
import { skillsModule } from './features/skills/module.js';
import { catalogModule, solutionsModule } from './features/solutions/module.js';
import { telemetryModule } from './features/telemetry/module.js';
import { timetravelModule } from './features/timetravel/module.js';
import { tokenizeModule } from './features/token-count/module.js';
import { toolSearchModule } from './features/tool-search/module.js';
import { backgroundModule, runnerModule, toolRoutesModule } from './core/tools/module.js';
import { usageModule } from './features/usage/module.js';
import { usersModule } from './features/users/module.js';
import { identityModule } from './features/identity/module.js';
import { teamStoreModule, teamsModule } from './features/teams/module.js';

/** Work that runs once the service listens (timers, queues, listeners), stopped at shutdown. */
export interface Job {
  name: string;
  /** The shutdown phase that stops it (default intake: stop taking new work first). */
  phase?: Phase;
  start(server: { app: FastifyInstance; io: AppServer }): unknown;
  stop?(): Promise<unknown>;
}

declare module './platform/lib/modules.js' {
  /** What every module's start is given (made by startService before any module). */
  interface Kernel {
    config: Config;
    logger: Logger;
    db: Database;
    /** The run engine's seams (src/core/engine/hooks.ts). */
    hooks: Hooks;
    tools: ToolRegistry;
    prompt: SystemPrompt;
    /** Lines `up` shows after starting, as warnings. */
    warnings: string[];
    /** Lines `up` shows after starting, as information (nothing is wrong). */
    notes: string[];
    /** A model port that replaces the configured router (benchmarks). */
    model?: ModelPort;
    /** Whether the service finished starting (plugin lines become log lines then). */
    started(): boolean;
  }
  /** What a module may contribute besides `provides` and `close` (applied by `contribute` below). */
  interface Contributions {
    routes?: RouteModule[];
    sockets?: SocketModule[];
    tools?: Tool[];
    toolProviders?: ToolProvider[];
    toolFilters?: ((scope: ToolScope, tools: Tool[]) => Tool[] | Promise<Tool[]>)[];
    prompts?: PromptContributor[];
    /** Run hooks: `{ on: 'run.opening', name: 'memories.recall', after?: [...], run }` (docs/architecture.md). */
    hooks?: HookContribution[];
    jobs?: Job[];
  }
}

/**
 * The system prompt's sections, first to last, by contributor name, whatever order their modules
 * start in; a section not named here (a plugin's) comes after them, in the order it was added.
 */
export const PROMPT_ORDER: readonly string[] = ['base', 'planning', 'skills', 'mcp', 'solution-role', 'memories'];

/**
 * The order tools are offered to the model in, whatever order their modules start in: registered
 * tools by name or by `provider`, then tool providers by name; one not named here comes after, in
 * the order it was added (src/core/tools/registry.ts `order`).
 */
export const TOOL_ORDER: readonly string[] = [
  // Registered tools: the file tools, Bash, WebFetch, WebSearch (when configured), the agent's own.
  'file_ops',
  'bash',
  'webfetch',
  'search',
  'AskUserQuestion',
  'Agent',
  'TaskCreate',
  'TaskUpdate',
  'TaskList',
  // Tool providers, listed per session.
  'skills',
  'mcp',
  'integrations',
  'memories',
];

/**
 * Every module of the service. The order here is only the tie-break among modules ready at once;
 * dependencies (`needs`, `before`) decide the rest. It decides neither the system prompt's order
 * nor the tools' (PROMPT_ORDER, TOOL_ORDER) nor the order of the run hooks' contributions (their
 * own `before` / `after`).
 */
export const MODULES: readonly Module[] = [
  quotaModule,
  usersModule,
  telemetryModule,
  eventsModule,
  egressModule,
  runnerModule,
  foldersModule,
  backgroundModule,
  agentsModule,
  pluginsModule,
  teamStoreModule,
  catalogModule,
  adminModule,
  identityModule,
  solutionsModule,
  sessionsModule,
  memoriesModule,
  productionModule,
  usageModule,
  runLimitsModule,
  modelsModule,
  engineModule,
  policyModule,
  modelKeysModule,
  egressPolicyModule,
  timetravelModule,
  compactionModule,
  toolSearchModule,
  chatModule,
  schedulingModule,
  inboxModule,
  webhooksModule,
  teamsModule,
  retentionModule,
  filesModule,
  toolRoutesModule,
  computersModule,
  sessionTasksModule,
  tokenizeModule,
  settingsModule,
  sharingModule,
  portabilityModule,
  replayModule,
  appsModule,
  annotationsModule,
  frontendConfigModule,
  gisModule,
  diagnosticsModule,
  registryModule,
  skillsModule,
  doorsModule,
  mcpDoorModule,
  agUiModule,
];

/** What the modules contributed that the server is built from. */
export interface Collected {
  routes: RouteModule[];
  sockets: SocketModule[];
  jobs: Job[];
}

/** Apply one module's contribution: tools, prompt parts and listeners now; routes, sockets and jobs collected. */
export function contribute(k: { tools: ToolRegistry; prompt: SystemPrompt; hooks: Hooks }, out: Started<string>, into: Collected) {
  for (const t of out.tools ?? []) k.tools.register(t);
  for (const p of out.toolProviders ?? []) k.tools.addProvider(p);
  for (const f of out.toolFilters ?? []) k.tools.addFilter(f);
  for (const p of out.prompts ?? []) k.prompt.add(p);
  for (const h of out.hooks ?? []) k.hooks.add(h);
  into.routes.push(...(out.routes ?? []));
  into.sockets.push(...(out.sockets ?? []));
  into.jobs.push(...(out.jobs ?? []));
}
