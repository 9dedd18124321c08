/**
 * The runner port: where tools execute. One "computer" per user; each session works in its own
 * folder inside it. Implementations: runners/local (subprocess, bubblewrap when present) and
 * runners/docker (one container per user through dockerode). test/runners/conformance.ts runs
 * the same suite against each.
 */

export type OutputStream = 'stdout' | 'stderr';

export interface ExecOptions {
  /** Working directory, relative to the computer's workspace root or absolute inside it. */
  cwd?: string;
  env?: Record<string, string>;
  /** Kill the whole process group after this many milliseconds. */
  timeoutMs?: number;
  /** Aborting kills the whole process group. */
  signal?: AbortSignal;
  /** Streamed output, as it arrives (decoded UTF-8). */
  onOutput?: (stream: OutputStream, chunk: string) => void;
  /** Cap on the bytes kept in ExecResult.stdout/stderr each (the stream callback still sees all). */
  maxOutputBytes?: number;
  /**
   * Standard input, closed at its end (without it the process reads end of file at once). An async
   * iterable is written as it yields, so a stdio server (an MCP server) can run inside the computer
   * with `onOutput` as its other half.
   */
  stdin?: string | Uint8Array | AsyncIterable<string | Uint8Array>;
  /** Whom the command's network connections are for: the audit of refused ones (docs/policy-network.md). */
  origin?: { sessionId: string; toolCallId?: string | null };
}

export interface ExecResult {
  exitCode: number | null;
  /** Signal that ended the process, if any (e.g. SIGKILL after a timeout). */
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  /** True when stdout or stderr was cut at maxOutputBytes. */
  truncated: boolean;
  durationMs: number;
}

/**
 * A user's sandbox, exec only. Host code never reaches its files through it: the service reads and
 * writes a user's tree through the confined file layer (src/core/files/folder-fs.ts), which walks
 * by descriptors from the workspaces root, so a runner hands out no host path at all.
 */
export interface Computer {
  readonly userId: string;
  /** The workspace root as processes inside the computer see it (e.g. /workspace). */
  readonly root: string;
  /**
   * Set when processes inside run as another uid than the service (the docker image's non-root
   * user, the local runner's sandbox user under a root service): entries the service creates in
   * the workspace are handed to it (through their descriptors), or tools cannot change them.
   */
  readonly owner?: { uid: number; gid: number };
  exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
}

export interface ComputerVersion {
  upgrade_available: boolean;
  reason: string;
  current_version: string;
  target_version: string;
}

export interface ResetResult {
  removed_containers: number;
  removed_volume: boolean;
}

export interface RunnerCheck {
  ok: boolean;
  /** One line for the operator, e.g. "bubblewrap not found: tools run unconfined". */
  warning?: string;
  /** Set when the runner cannot work at all (e.g. Docker daemon unreachable). */
  error?: string;
  /** One line saying how commands are confined, for `up` (e.g. "commands confined by bubblewrap: ..."). */
  summary?: string;
}

/** A path deny: a glob over a session folder's paths (docs/policy-paths.md). */
export interface PathDeny {
  glob: string;
  /** `all`: processes neither read, list nor write what it matches; `write`: they only read it. */
  access: 'all' | 'write';
}

/** The path denies of one user's computer: for every session folder, and per session folder. */
export interface PathDenySet {
  every: PathDeny[];
  sessions: Record<string, PathDeny[]>;
}

/**
 * Where a runner gets a user's path denies from (the tool policy), asked when a process starts,
 * with the session folders the computer holds.
 */
export type PathPolicy = (userId: string, sessions: string[]) => Promise<PathDenySet>;

export interface Runner {
  readonly kind: string;
  /**
   * The workspace root as processes of every computer of this runner see it, known before any is
   * acquired (docker: /workspace); absent when it is each user's host folder (local).
   */
  readonly computerRoot?: string;
  /**
   * Hold every process to the path denies `policy` answers for its user (docs/policy-paths.md):
   * denied entries that exist when it starts cannot be opened (nor written, for write denies).
   */
  setPathPolicy(policy: PathPolicy | null): void;
  /** Probe the environment once at start. */
  check(): Promise<RunnerCheck>;
  /** Get (create on first use, reuse afterwards) the user's computer. */
  acquire(userId: string): Promise<Computer>;
  /** Remove the user's computer and its workspace. */
  reset(userId: string): Promise<ResetResult>;
  version(userId: string): Promise<ComputerVersion>;
  /** Recreate the computer on the configured image, keeping the workspace. */
  upgrade(userId: string): Promise<ResetResult>;
  /** Stop timers, kill running processes started through this runner. Containers are kept. */
  close(): Promise<void>;
}

export class RunnerUnavailableError extends Error {
  readonly code = 'RUNNER_UNAVAILABLE';
}
