import type { FastifyInstance } from 'fastify';
import type { Hooks, HookEvents } from './chat/hooks.js';
import type { ModelPort } from './chat/model.js';
import type { PromptContributor, SystemPrompt } from './chat/system-prompt.js';
import type { Config } from './config/index.js';
import type { Database } from './db/index.js';
import type { Logger } from './lib/logger.js';
import type { Module, Started } from './lib/modules.js';
import type { Phase } from './lib/shutdown.js';
import type { RouteModule } from './server/app.js';
import type { AppServer, SocketModule } from './server/gateway.js';
import type { ToolRegistry } from './tools/registry.js';
import type { Tool, ToolProvider, ToolScope } from './tools/types.js';
import { adminModule } from './admin/module.js';
import { agentsModule, tasksModule } from './agents/module.js';
import { annotationsModule } from './annotations/module.js';
import { appsModule } from './apps/module.js';
import { chatModule, engineModule, eventsModule } from './chat/module.js';
import { compactionModule } from './compaction/module.js';
import { computersModule, runnerModule } from './computers/module.js';
import { diagnosticsModule } from './diagnostics/module.js';
import { filesModule, foldersModule } from './files/module.js';
import { frontendConfigModule } from './frontend-config/module.js';
import { gisModule } from './gis/module.js';
import { memoriesModule } from './memories/module.js';
import { modelsModule } from './models/module.js';
import { pluginsModule } from './plugins/module.js';
import { policyModule } from './policy/module.js';
import { portabilityModule } from './portability/module.js';
import { productionModule } from './production/module.js';
import { registryModule } from './registry/module.js';
import { replayModule } from './replay/module.js';
import { retentionModule } from './retention/module.js';
import { schedulingModule } from './scheduling/module.js';
import { sessionsModule } from './sessions/module.js';
import { settingsModule } from './settings/module.js';
import { sharingModule } from './sharing/module.js';
import { skillsModule } from './skills/module.js';
import { catalogModule, solutionsModule } from './solutions/module.js';
import { telemetryModule } from './telemetry/module.js';
import { timetravelModule } from './timetravel/module.js';
import { tokenizeModule } from './tokenize/module.js';
import { backgroundModule, toolRoutesModule } from './tools/module.js';
import { usageModule } from './usage/module.js';
import { usersModule } from './users/module.js';
import { teamStoreModule, teamsModule } from './workspaces/module.js';

/** A hook listener a module contributes: `{ on: 'session.deleted', run: ({ sessionId }) => ... }`. */
export type HookListener = { [K in keyof HookEvents]: { on: K; run: (payload: HookEvents[K]) => unknown } }[keyof HookEvents];

/** Work that runs once the service listens (timers, queues, listeners), stopped at shutdown. */
export interface Job {
  name: string;
  /** The shutdown phase that stops it (default intake: stop taking new work first). */
  phase?: Phase;
  start(server: { app: FastifyInstance; io: AppServer }): unknown;
  stop?(): Promise<unknown>;
}

declare module './lib/modules.js' {
  /** What every module's start is given (made by startService before any module). */
  interface Kernel {
    config: Config;
    logger: Logger;
    db: Database;
    /** The run engine's seams (src/chat/hooks.ts). */
    hooks: Hooks;
    tools: ToolRegistry;
    prompt: SystemPrompt;
    /** Lines `up` shows after starting. */
    warnings: string[];
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
    hooks?: HookListener[];
    jobs?: Job[];
  }
}

/**
 * Every module of the service. The order here is only the tie-break among modules ready at once
 * (it keeps tools and prompt parts in the order they are offered); dependencies decide the rest.
 */
export const MODULES: readonly Module[] = [
  usersModule,
  telemetryModule,
  eventsModule,
  runnerModule,
  foldersModule,
  backgroundModule,
  agentsModule,
  pluginsModule,
  teamStoreModule,
  catalogModule,
  adminModule,
  solutionsModule,
  sessionsModule,
  memoriesModule,
  productionModule,
  usageModule,
  modelsModule,
  engineModule,
  policyModule,
  timetravelModule,
  compactionModule,
  chatModule,
  schedulingModule,
  teamsModule,
  retentionModule,
  filesModule,
  toolRoutesModule,
  computersModule,
  tasksModule,
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
  for (const h of out.hooks ?? []) k.hooks.on(h.on, h.run as never);
  into.routes.push(...(out.routes ?? []));
  into.sockets.push(...(out.sockets ?? []));
  into.jobs.push(...(out.jobs ?? []));
}
