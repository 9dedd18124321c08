/**
 * The public plugin API: what `import type {...} from 'agentsvc/plugin'` gives a plugin author.
 *
 * Self-contained on purpose (no import of the service's internals): these types are the contract
 * with outside plugins and change only compatibly. The loader (loader.ts) checks at compile time
 * that the service's own tool and provider types fit them. First-party providers under plugins/
 * (skills, mcp, integrations) are written against this file and nothing else of the service.
 */

/** Classification of a tool (docs/tools.md "Tool providers"). Plugins mostly use `skill`, `mcp` or `integration`. */
export type ToolProviderKind = 'bash' | 'file_ops' | 'builtin' | 'fork' | 'search' | 'webfetch' | 'skill' | 'mcp' | 'integration';

export type JsonSchema = Record<string, unknown>;

/** Output of a command run in the user's computer. */
export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  truncated: boolean;
  durationMs: number;
}

/** The user's sandbox ("computer"): commands and files run confined there, never on the host. */
export interface PluginComputer {
  /** The workspace root as processes inside see it. */
  readonly root: string;
  exec(
    command: string,
    opts?: {
      cwd?: string;
      env?: Record<string, string>;
      timeoutMs?: number;
      signal?: AbortSignal;
      maxOutputBytes?: number;
      /** Output as it arrives (decoded UTF-8). */
      onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void;
      /** Standard input, closed at its end; an async iterable is written as it yields (a stdio server). */
      stdin?: string | Uint8Array | AsyncIterable<string | Uint8Array>;
    },
  ): Promise<ExecResult>;
}

/**
 * Files of a folder, confined to it: paths are relative to it (or absolute inside it as the computer
 * sees it); `..`, absolute paths out and links that leave it throw, and a link is never followed out.
 * There is no host path: a plugin reads and writes through these calls only.
 */
export interface PluginFiles {
  /** A regular file's bytes (default at most 1 MiB; larger throws with code EFBIG). */
  read(path: string, maxBytes?: number): Promise<Buffer>;
  /** Replace or create a file atomically, making its folders. */
  write(path: string, data: string | Uint8Array, opts?: { executable?: boolean }): Promise<{ created: boolean }>;
  mkdir(path: string): Promise<void>;
  /** A folder's entries; [] when the path is a file; missing throws with code ENOENT. */
  list(path: string): Promise<{ name: string; type: 'file' | 'directory'; size?: number }[]>;
  /** null when nothing is there. */
  stat(path: string): Promise<{ type: 'file' | 'directory' | 'other'; size: number; mtimeMs: number } | null>;
  rename(from: string, to: string): Promise<void>;
  copy(from: string, to: string): Promise<void>;
  /** A file, a link (the link only) or a folder with everything in it; nothing when missing. */
  remove(path: string): Promise<void>;
}

/** The session's folder: its files through `files`, its commands through `computer()`. */
export interface PluginWorkspace {
  /** The same folder as processes inside the computer see it (for a command's cwd). */
  readonly computerDir: string;
  readonly files: PluginFiles;
  computer(): Promise<PluginComputer>;
}

export interface ToolContext {
  userId: string;
  sessionId: string;
  /** This call's id (`tc_...`). */
  callId: string;
  /** `root` for the main loop, else a sub-agent loop's id. */
  loopId: string;
  /** Aborted on chat:stop, timeouts and shutdown: stop work and return. */
  signal: AbortSignal;
  /** A progress note for clients (not the model). */
  progress(message: string): void;
  workspace: PluginWorkspace;
  /** The session's environment variables (PUT .../env). */
  env?: Record<string, string>;
  /** One-shot completion with the session's model. */
  llm: { complete(input: { system: string; user: string; signal?: AbortSignal; maxTokens?: number }): Promise<string> };
}

export interface ToolResult {
  output: string;
  status?: 'done' | 'error';
}

/** A tool is data plus execute(). Arguments are validated against `parameters` before execute runs. */
// biome-ignore lint/suspicious/noExplicitAny: execute's arguments are whatever `parameters` describes
export interface Tool<A = any> {
  /** 1-64 of [A-Za-z0-9_-], unique among the tools a session is offered. */
  name: string;
  displayName?: string;
  /** What the model reads. */
  description: string;
  provider: ToolProviderKind;
  /** JSON Schema of the arguments. */
  parameters: JsonSchema;
  /** `parameters` was compiled by the provider already: the service compiles it at the first call only, not at every listing. */
  schemaChecked?: boolean;
  /** Only reads: may run beside other parallel-safe calls. */
  parallel?: boolean;
  execute(args: A, ctx: ToolContext): Promise<string | ToolResult>;
}

/** Whom tools and prompt sections are for. */
export interface SessionScope {
  userId: string;
  sessionId: string;
}

export interface Health {
  status: 'ok' | 'warn' | 'fail';
  detail: string;
}

/**
 * A source of tools that may change while the service runs. `tools(scope)` is asked at the start of
 * every run (and again before a model call after `api.toolsChanged()`), so tools come and go
 * without a restart.
 */
export interface ToolProvider {
  /** Unique among providers, e.g. `skills`, `mcp`. */
  name: string;
  tools(scope: SessionScope): Tool[] | Promise<Tool[]>;
  /** Shown by GET /api/env/check as check `plugin:<name>`. */
  health?(): Promise<Health>;
  /** The first run of a session in this process is about to start. */
  sessionStart?(scope: SessionScope): Promise<void>;
  /** The session was deleted. */
  sessionEnd?(scope: SessionScope): Promise<void>;
  /** Release processes and connections; called on shutdown. */
  close?(): Promise<void>;
}

export interface PromptContext extends SessionScope {
  /** `planning` or `executing`. */
  mode: string;
}

/** A section of every run's system prompt (null for none). A contributor that throws is left out. */
export interface PromptContributor {
  name: string;
  contribute(ctx: PromptContext): string | null | Promise<string | null>;
}

/** One line of GET /api/env/check (and `agentsvc doctor` against a running service). */
export interface CheckResult {
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  /** What to do about a warn or fail. */
  fix?: string | null;
}

/** Who asked for the checks: a non-admin is shown their own state only (e.g. their MCP server's stderr). */
export interface CheckViewer {
  userId: string;
  admin: boolean;
}

export interface HealthCheck {
  /** Shown as `<plugin>:<id>`. */
  id: string;
  /** Bounded in time by the service (3 s); throwing counts as fail. `viewer` is absent outside a request. */
  run(viewer?: CheckViewer): Promise<CheckResult>;
}

/** What a plugin may read of the configuration: no secrets. */
export interface PluginConfig {
  home: string;
  model: { default: string; models: string[]; contextWindow: number };
  runner: { kind: 'local' | 'docker'; network: boolean };
  web: { allowPrivate: boolean };
  publicSharing: boolean;
  memoryEnabled: boolean;
}

/**
 * A session's folder outside a tool call (prompt sections, listings, installing files). Every path
 * is relative to the session folder and confined to it: `..`, absolute paths out and links that
 * leave it throw, and a link is never followed out of it. Missing paths throw with code ENOENT.
 */
export interface SessionFiles {
  workspace(scope: SessionScope): PluginWorkspace;
  /** A file's bytes (default at most 1 MiB; larger throws with code EFBIG). */
  read(scope: SessionScope, path: string, maxBytes?: number): Promise<Buffer>;
  /** A folder's entries; [] when the path is a file. */
  list(scope: SessionScope, path: string): Promise<{ name: string; type: 'file' | 'directory'; size: number }[]>;
  /** Write a file, creating its folders. */
  write(scope: SessionScope, path: string, data: string | Uint8Array, opts?: { executable?: boolean }): Promise<void>;
  /** Remove a file or a folder with everything in it; nothing when missing. */
  remove(scope: SessionScope, path: string): Promise<void>;
}

export interface FetchResponse {
  status: number;
  /** After redirects. */
  url: string;
  contentType: string;
  body: Buffer;
  /** The body was cut at maxBytes. */
  truncated: boolean;
}

export interface FetchOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
  /** Default 15 s. */
  timeoutMs?: number;
  /** Default 5 MiB. */
  maxBytes?: number;
}

export interface PluginApi {
  /**
   * HTTP with WebFetch's SSRF guard: only public internet addresses (checked at every hop and
   * pinned against DNS rebinding) unless the operator set AGENTSVC_WEBFETCH_ALLOW_PRIVATE.
   * Throws for refused or unreachable targets; any HTTP status resolves.
   */
  fetch(url: string, opts?: FetchOptions): Promise<FetchResponse>;
  /** A fixed tool, offered in every session. */
  registerTool(tool: Tool): void;
  /** A provider whose tools are listed per session and may change while the service runs. */
  registerProvider(provider: ToolProvider): void;
  /** A section of every run's system prompt. */
  addPromptContributor(contributor: PromptContributor): void;
  /** A check for GET /api/env/check. */
  addHealthCheck(check: HealthCheck): void;
  /** Called when a session's first run in this process starts (before its tools are listed). */
  onSessionStart(fn: (scope: SessionScope) => void | Promise<void>): void;
  /** Called when a session is deleted. */
  onSessionEnd(fn: (scope: SessionScope) => void | Promise<void>): void;
  /** Tell the service the tool list changed: runs in flight list tools again before their next model call. */
  toolsChanged(): void;
  /** Called on shutdown, after runs ended. */
  onClose(fn: () => void | Promise<void>): void;
  /** Session folders, confined. */
  files: SessionFiles;
  config: Readonly<PluginConfig>;
  /**
   * This plugin's own settings: config.json `plugin_options.<name>` (first-party plugins get theirs
   * from their own settings, e.g. `mcp`). May hold the plugin's secrets; other plugins never see them.
   */
  options: Readonly<Record<string, unknown>>;
  /** A problem the operator should see (`up` prints it as a warning, later a warn log line). */
  log(message: string): void;
  /** What happened, not a problem (`up` prints it as a plain line, later an info log line). */
  info(message: string): void;
}

/** A plugin module's default export. */
export interface AgentsvcPlugin {
  /** 1-64 of [a-z0-9_-]. */
  name: string;
  /** Free text shown in the registry. */
  description?: string;
  version?: string;
  register(api: PluginApi): void | Promise<void>;
}

/** Throw from execute for a problem the model should see and can fix (the result has status `error`). */
export class ToolError extends Error {
  readonly isToolError = true;
}

/** Identity function that gives a plugin object its type (for TypeScript and JSDoc users). */
export function definePlugin(plugin: AgentsvcPlugin): AgentsvcPlugin {
  return plugin;
}
