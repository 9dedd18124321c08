/** The shape of the one typed config (src/platform/config/index.ts reads and checks it). */
import type { InstallPolicy } from './policy.js';
import type { BudgetSpec, ModelEntry } from './models.js';
import type { IdentityConfig } from './identity.js';

/** One setting as `GET /api/env` shows it (secrets masked there). */
export interface SettingItem {
  env_var: string;
  value: string;
  default: string;
}

export interface Config {
  /** Every setting's effective value and default, for `GET /api/env`. */
  settings: SettingItem[];
  home: string;
  /** Root of the users' workspaces: AGENTSVC_WORKSPACES, else <home>/workspaces (shared storage for several nodes). */
  workspaces: string;
  host: string;
  port: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Size at which agentsvc.log is rotated (5 files kept). */
  logMaxBytes: number;
  /** How long SIGTERM/SIGINT may take before what is left is stopped hard (docs/operations.md). */
  shutdownSeconds: number;
  databaseUrl?: string;
  redisUrl?: string;
  /** Several nodes: a node whose heartbeat is older than this is dead, and its runs are closed by another (docs/scale-out.md). */
  nodeStaleSeconds: number;
  model: {
    baseUrl: string;
    apiKey: string;
    default: string;
    models: string[];
    /** Every offered model with its endpoint, key, window, price and fallbacks (docs/models-and-usage.md). */
    entries: ModelEntry[];
    /** Retries of a call that fails before its first delta, per model of the chain. */
    retries: number;
    contextWindow: number;
    maxCallsPerRun: number;
    timeoutMs: number;
    maxForkDepth: number;
  };
  /** Ceilings on a run and its loop detector (src/features/run-limits, docs/run-limits.md). */
  runLimits: {
    /** Wall clock of a run, the waits for a question or an approval left out. */
    maxSeconds: number;
    maxToolCalls: number;
    /** The same call with the same result this many times in a row ends the run. */
    loopRepeats: number;
  };
  runner: {
    kind: 'local' | 'docker';
    image: string;
    network: boolean;
    /** Local runner without bubblewrap: run commands unconfined instead of refusing them. */
    allowUnconfined: boolean;
    idleMs: number;
    memoryBytes: number;
    nanoCpus: number;
    pidsLimit: number;
    dockerHost?: string;
  };
  limits: {
    body: number;
    file: number;
    /** Files over this are left out of checkpoints (listed as skipped). */
    snapshotFile: number;
    upload: number;
    /** Files and total bytes of one upload request. */
    uploadFiles: number;
    uploadTotal: number;
    socketMessage: number;
    /** Bytes of events a socket may have pending (not yet taken by its client) before it is disconnected. */
    socketBuffer: number;
    toolOutput: number;
    bashTimeoutMs: number;
    /** Open Socket.IO connections per user and process. */
    socketsPerUser: number;
    /** REST requests per user and minute (0: unlimited). */
    ratePerMinute: number;
  };
  background: { maxTasks: number; maxLifetimeMs: number; outputBytes: number };
  web: { allowPrivate: boolean; searchBackend?: 'searxng' | 'brave' | 'tavily'; searchUrl?: string; searchApiKey?: string };
  /** Per-user and per-socket bounds of the chat gateway. */
  chat: { runsPerUser: number; startsAtOnce: number; subscriptionsPerSocket: number };
  replayTtlHours: number;
  /** Poll interval of the database-backed scheduler (no Redis). */
  schedulerPollMs: number;
  /** Webhooks (docs/webhooks.md): private targets allowed; the first retry's delay, doubled each time. */
  webhooks: { allowPrivate: boolean; retryBaseMs: number };
  compaction: { at: number; keepTurns: number };
  /** Past this many tools (or 10% of the context window) a run offers ToolSearch instead (docs/tool-search.md). */
  toolSearch: { directMax: number };
  memoryTopK: number;
  plugins: string[];
  /** config.json `plugin_options`: each outside plugin's own settings, by plugin name. */
  pluginOptions: Record<string, Record<string, unknown>>;
  /** config.json `mcp` as given: the MCP plugin parses it (firstPartySettings in src/features/plugin-host). */
  mcp: { servers: unknown; timeoutMs: number };
  /** config.json `integrations` as given: the integrations plugin parses it. */
  integrations: unknown;
  /** The install's tool policy (docs/policy.md): default, rules, unattended. */
  policy: InstallPolicy;
  skills: { promptTokens: number; uploadBytes: number };
  publicSharing: boolean;
  /** A bearer token that may read GET /metrics besides admin keys (a scraper needs no user). */
  metricsToken?: string;
  /**
   * The key personal model credentials are sealed with (AGENTSVC_SECRET_KEY; absent: one generated
   * into AGENTSVC_HOME/secret.key) and the one before it while a rotation is under way
   * (AGENTSVC_SECRET_KEY_PREVIOUS): docs/model-keys.md.
   */
  secretKey?: { current?: string; previous?: string };
  /** Sessions unpinned and untouched this many days are deleted (0: never); newest checkpoints kept per branch (0: all). */
  retention: { days: number; checkpointKeep: number };
  /** Bytes of workspaces per user (0: no quota). */
  userQuotaBytes: number;
  /** Default lifetime of a share link, and the origin its url starts with (else the request's). */
  share: { ttlSeconds: number; publicUrl?: string };
  /** Bounds on an imported archive: entries and unpacked bytes. */
  importLimits: { entries: number; bytes: number };
  memoryEnabled: boolean;
  /** Sign-in: the OpenID Connect provider, roles, sign-in lifetimes (docs/identity.md). */
  identity: IdentityConfig;
  /** The install's budgets (AGENTSVC_BUDGETS); day and month periods follow `timeZone`. */
  budgets: BudgetSpec[];
  /** The install's time zone (AGENTSVC_TIMEZONE): where a budget's day and month begin. */
  timeZone: string;
  /** Where each setting came from, for `agentsvc up` diagnostics. */
  file?: string;
}
