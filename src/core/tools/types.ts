import type { SessionSandbox } from '../files/session-folder.js';

/** Classification of tools (docs/tools.md "Tool providers"). */
export type ProviderKind =
  | 'bash' | 'file_ops' | 'builtin' | 'fork' | 'search' | 'webfetch' | 'skill' | 'mcp' | 'integration';

export type JsonSchema = Record<string, unknown>;

/** The session folder a tool works in: defined by the files module, which confines it. */
export type { SessionSandbox };

/** What the model is told of a tool. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** One-shot model completion, for tools that need the model (WebFetch answers its prompt). */
export interface CompletionPort {
  complete(input: { system: string; user: string; signal?: AbortSignal; maxTokens?: number }): Promise<string>;
}

export interface ToolContext {
  userId: string;
  sessionId: string;
  /** Id of this tool call (`tc_...`). */
  callId: string;
  /** `root` for the main loop, else the sub-agent loop's id. */
  loopId: string;
  /** Aborted on chat:stop, timeouts and shutdown. */
  signal: AbortSignal;
  /** Progress notes for long tools (shown to clients, not to the model). */
  progress(message: string): void;
  workspace: SessionSandbox;
  /** The session's environment variables (PUT .../env), for commands. */
  env?: Record<string, string>;
  llm: CompletionPort;
  /** Sub-agents: set for the Agent tool's calls while forking is allowed at this depth. */
  fork?: ForkService;
  /**
   * Ask the tool policy again about this call with other arguments (a WebFetch redirect to
   * another URL): a message when it may not go on, null when it may.
   */
  recheck?: (args: Record<string, unknown>) => Promise<string | null>;
}

/** Runs a sub-agent loop nested under the current tool call (the Agent tool). */
export interface ForkService {
  /** Run a sub-agent to its end; resolves with its final answer. Throws ToolPause when it asked the user. */
  fork(input: { description: string; prompt: string; subagent_type?: string }): Promise<string>;
}

export interface ToolResult {
  output: string;
  status?: 'done' | 'error';
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type; execute's args are validated first
export interface Tool<A = any> {
  name: string;
  /** Human label for clients; defaults to name. */
  displayName?: string;
  /** What the model reads; long texts live in a sibling .md file. */
  description: string;
  provider: ProviderKind;
  /** JSON Schema of the arguments; they are validated before execute runs. */
  parameters: JsonSchema;
  /**
   * The provider compiled `parameters` already: the registry compiles it at the tool's first call,
   * not whenever it is listed (a large integration's schemas are built only when offered).
   */
  schemaChecked?: boolean;
  /** Only reads: may run side by side with other parallel-safe calls of the same message. */
  parallel?: boolean;
  /** A well-formed call pauses the run for the user (AskUserQuestion): it is never executed. */
  pauses?: boolean;
  execute(args: A, ctx: ToolContext): Promise<string | ToolResult>;
}

/** Whom a provider lists its tools for. */
export interface ToolScope {
  userId: string;
  sessionId: string;
  /** Inside a run: the session's memory_enabled as its claim read it (a provider needs no query). */
  memoryEnabled?: boolean;
  /** Inside a run: the session's session_setup as its claim read it (null: none; absent: not read). */
  setup?: Record<string, unknown> | null;
}

export interface ProviderHealth {
  status: 'ok' | 'warn' | 'fail';
  detail: string;
}

/**
 * A source of tools that may change while the service runs: builtin tools, skills, MCP servers,
 * integrations. The registry asks it for its tools at every run start, so tools can come and
 * go without a restart.
 */
export interface ToolProvider {
  /** Unique, e.g. `builtin`, `skills`, `mcp:github`. */
  name: string;
  /** The tools offered in this session now. */
  tools(scope: ToolScope): Tool[] | Promise<Tool[]>;
  /** Re-read the tool list (e.g. an MCP server's tools/list_changed). */
  refresh?(): Promise<void>;
  /** For /api/env/check: is the provider usable? */
  health?(): Promise<ProviderHealth>;
  /** A run of this session starts / the session is deleted. */
  sessionStart?(scope: ToolScope): Promise<void>;
  sessionEnd?(scope: ToolScope): Promise<void>;
  /** Release what it holds (processes, connections); called on shutdown. */
  close?(): Promise<void>;
}

/**
 * Thrown by a tool for a failure the model should see and can correct (bad path, missing
 * old_string, ...). The loop turns it into a tool result with status `error`; the run goes on.
 */
export class ToolError extends Error {
  readonly isToolError = true;
}

/** Thrown through the tool layer when the call waits for the user (a sub-agent asked a question): the call stays pending. */
export class ToolPause extends Error {
  readonly isPause = true;
}
