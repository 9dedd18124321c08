import { readFileSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { parseInstallPolicy } from './policy.js';
import { parseBudgets, parseModels } from './models.js';
import { oidcSettings, parseRoleMap } from './identity.js';
import type { Config, SettingItem } from './types.js';

export type { Config, SettingItem };
import { knownTimeZone } from '../lib/cron.js';

/**
 * One typed config, read once at start from the environment and AGENTSVC_HOME/config.json
 * (or --config FILE). Keys in the file are the same names as the environment variables;
 * the environment wins. A wrong setting raises ConfigError naming it.
 */

const MiB = 1024 * 1024;

const bool = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no', ''])])
  .transform((v) => v === true || v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max);
const url = (protocols: string[]) =>
  z.string().refine((v) => {
    try {
      return protocols.includes(new URL(v).protocol);
    } catch {
      return false;
    }
  }, `must be a URL with scheme ${protocols.map((p) => p.replace(':', '')).join(' or ')}`);

/** A JSON object setting: JSON text in the environment, an object in config.json; `parse` checks its shape. */
const jsonObject = <T>(parse: (v: unknown) => T) =>
  z.unknown().transform((v, ctx) => {
    try {
      return parse(v);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: (e as Error).message });
      return z.NEVER;
    }
  });
/** A plugin's own section, as JSON: the plugin parses and checks it (src/features/plugin-host/first-party.ts). */
const pluginSection = (v: unknown): unknown => {
  if (typeof v !== 'string' || !v) return v ?? {};
  try {
    return JSON.parse(v);
  } catch (e) {
    throw new Error(`not valid JSON (${(e as Error).message})`);
  }
};
const anyObject = (v: unknown): Record<string, Record<string, unknown>> => {
  const o = typeof v === 'string' && v ? JSON.parse(v) : (v ?? {});
  if (typeof o !== 'object' || Array.isArray(o) || Object.values(o).some((x) => !x || typeof x !== 'object' || Array.isArray(x))) {
    throw new Error('must be a JSON object of option objects by plugin name');
  }
  return o;
};

/** config.json keys that name a setting by a shorter name (docs/plugins.md: `mcp`, `integrations`). */
const FILE_ALIASES: Record<string, string> = { oidc_roles: 'AGENTSVC_OIDC_ROLES', models: 'AGENTSVC_MODELS', budgets: 'AGENTSVC_BUDGETS', mcp: 'AGENTSVC_MCP_SERVERS', integrations: 'AGENTSVC_INTEGRATIONS', plugin_options: 'AGENTSVC_PLUGIN_OPTIONS', policy: 'AGENTSVC_POLICY' };

/** Setting name (environment variable) -> schema and default. */
const settings = {
  AGENTSVC_HOME: z.string().min(1).default(join(homedir(), '.agentsvc')),
  AGENTSVC_WORKSPACES: z.string().min(1).optional(),
  AGENTSVC_HOST: z.string().min(1).default('127.0.0.1'),
  AGENTSVC_PORT: int(0, 65535).default(8080),
  AGENTSVC_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  AGENTSVC_LOG_MAX_BYTES: int(4096).default(50 * MiB),
  AGENTSVC_SHUTDOWN_SECONDS: int(1, 3600).default(30),
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  REDIS_URL: url(['redis:', 'rediss:']).optional(),
  AGENTSVC_NODE_STALE_SECONDS: int(2, 3600).default(30),
  OPENAI_BASE_URL: url(['http:', 'https:']).default('https://api.openai.com/v1'),
  OPENAI_API_KEY: z.string().default(''),
  AGENTSVC_MODEL: z.string().min(1).max(200).default('gpt-4o-mini'),
  AGENTSVC_MODELS: z.unknown(),
  AGENTSVC_MODEL_RETRIES: int(0, 10).default(3),
  AGENTSVC_BUDGETS: z.unknown(),
  AGENTSVC_TIMEZONE: z
    .string()
    .refine(knownTimeZone, 'must be an IANA time zone such as UTC or Europe/Berlin')
    .default(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'),
  AGENTSVC_CONTEXT_WINDOW: int(1024).default(128000),
  AGENTSVC_MAX_MODEL_CALLS: int(1, 1000).default(50),
  AGENTSVC_RUN_MAX_SECONDS: int(1, 30 * 86400).default(3600),
  AGENTSVC_RUN_MAX_TOOL_CALLS: int(1, 1_000_000).default(500),
  AGENTSVC_LOOP_REPEATS: int(2, 1000).default(5),
  AGENTSVC_MODEL_TIMEOUT_MS: int(1000).default(300000),
  AGENTSVC_MAX_FORK_DEPTH: int(0, 10).default(2),
  AGENTSVC_RUNNER: z.enum(['local', 'docker']).default('local'),
  AGENTSVC_RUNNER_IMAGE: z.string().min(1).default('agentsvc-runner:latest'),
  AGENTSVC_RUNNER_NETWORK: bool.default(false),
  AGENTSVC_ALLOW_UNCONFINED: bool.default(false),
  AGENTSVC_RUNNER_IDLE_MS: int(1000).default(30 * 60 * 1000),
  AGENTSVC_RUNNER_MEMORY_MB: int(64).default(2048),
  AGENTSVC_RUNNER_CPUS: z.coerce.number().positive().default(1),
  AGENTSVC_RUNNER_PIDS: int(16).default(512),
  DOCKER_HOST: z.string().optional(),
  AGENTSVC_BODY_LIMIT: int(1024).default(1 * MiB),
  AGENTSVC_FILE_LIMIT: int(1024).default(10 * MiB),
  AGENTSVC_SNAPSHOT_FILE_LIMIT: int(0).default(10 * MiB),
  AGENTSVC_UPLOAD_LIMIT: int(1024).default(100 * MiB),
  AGENTSVC_UPLOAD_MAX_FILES: int(1, 100000).default(100),
  AGENTSVC_UPLOAD_MAX_TOTAL: int(1024).default(1024 * MiB),
  AGENTSVC_SOCKET_MESSAGE_LIMIT: int(1024).default(10 * MiB),
  AGENTSVC_SOCKET_BUFFER_BYTES: int(65536).default(8 * MiB),
  AGENTSVC_MAX_SOCKETS_PER_USER: int(1).default(500),
  AGENTSVC_RATE_LIMIT_PER_MINUTE: int(0).default(6000),
  AGENTSVC_TOOL_OUTPUT_LIMIT: int(1024).default(30000),
  AGENTSVC_BASH_TIMEOUT_MS: int(1000).default(120000),
  AGENTSVC_BACKGROUND_MAX_TASKS: int(1, 1000).default(8),
  AGENTSVC_BACKGROUND_MAX_MS: int(1000).default(4 * 3600 * 1000),
  AGENTSVC_BACKGROUND_OUTPUT_BYTES: int(1024, 64 * MiB).default(1 * MiB),
  AGENTSVC_WEBFETCH_ALLOW_PRIVATE: bool.default(false),
  AGENTSVC_SEARCH_BACKEND: z.enum(['searxng', 'brave', 'tavily']).optional(),
  AGENTSVC_SEARCH_URL: url(['http:', 'https:']).optional(),
  AGENTSVC_SEARCH_API_KEY: z.string().optional(),
  AGENTSVC_REPLAY_TTL_HOURS: int(1).default(24),
  AGENTSVC_SCHEDULER_POLL_MS: int(100, 60_000).default(5000),
  AGENTSVC_WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  AGENTSVC_WEBHOOK_RETRY_BASE_MS: int(100, 3_600_000).default(5000),
  AGENTSVC_MEMORY_TOP_K: int(1, 50).default(5),
  AGENTSVC_COMPACT_AT: z.coerce.number().gt(0).lte(1).default(0.8),
  AGENTSVC_COMPACT_KEEP_TURNS: int(0, 1000).default(4),
  AGENTSVC_TOOLS_DIRECT_MAX: int(1, 127).default(40),
  AGENTSVC_PLUGINS: z.string().default(''),
  AGENTSVC_PLUGIN_OPTIONS: jsonObject(anyObject),
  AGENTSVC_MCP_SERVERS: jsonObject(pluginSection),
  AGENTSVC_MCP_TIMEOUT_MS: int(100, 3_600_000).default(60_000),
  AGENTSVC_INTEGRATIONS: jsonObject(pluginSection),
  AGENTSVC_POLICY: jsonObject(parseInstallPolicy),
  AGENTSVC_SKILLS_PROMPT_TOKENS: int(0, 100_000).default(2000),
  AGENTSVC_SKILL_UPLOAD_LIMIT: int(1024).default(5 * MiB),
  AGENTSVC_PUBLIC_SHARING: bool.default(true),
  AGENTSVC_SHARE_TTL_SECONDS: int(60, 31_536_000).default(604_800),
  AGENTSVC_IMPORT_MAX_ENTRIES: int(1).default(10_000),
  AGENTSVC_IMPORT_MAX_BYTES: int(1024).default(1024 * MiB),
  AGENTSVC_PUBLIC_URL: url(['http:', 'https:']).optional(),
  AGENTSVC_METRICS_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
  AGENTSVC_SECRET_KEY: z.string().optional(),
  AGENTSVC_SECRET_KEY_PREVIOUS: z.string().optional(),
  AGENTSVC_RETENTION_DAYS: int(0, 36500).default(0),
  AGENTSVC_CHECKPOINT_KEEP: int(0).default(0),
  AGENTSVC_USER_QUOTA_BYTES: int(0).default(0),
  AGENTSVC_MEMORY_ENABLED: bool.default(true),
  AGENTSVC_MAX_RUNS_PER_USER: int(1).default(64),
  AGENTSVC_RUN_STARTS_AT_ONCE: int(1, 1000).default(200),
  AGENTSVC_MAX_SUBSCRIPTIONS_PER_SOCKET: int(1).default(200),
  // Sign-in (docs/identity.md).
  AGENTSVC_OIDC_ISSUER: url(['http:', 'https:']).optional(),
  AGENTSVC_OIDC_CLIENT_ID: z.string().optional(),
  AGENTSVC_OIDC_CLIENT_SECRET: z.string().optional(),
  AGENTSVC_OIDC_NAME: z.string().max(60).optional(),
  AGENTSVC_OIDC_SCOPES: z.string().default('openid profile email'),
  AGENTSVC_OIDC_ROLES: jsonObject(parseRoleMap),
  AGENTSVC_KEY_SIGNIN: z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off', ''])])
    .transform((v) => !(v === false || v === 'false' || v === '0' || v === 'no' || v === 'off'))
    .default(true),
  AGENTSVC_SIGNIN_IDLE_HOURS: int(1, 24 * 365).default(12),
  AGENTSVC_SIGNIN_MAX_DAYS: int(1, 365).default(7),
  AGENTSVC_TRUST_PROXY: bool.default(false),
} as const;

type Settings = { [K in keyof typeof settings]: z.output<(typeof settings)[K]> };

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`invalid setting ${setting}: ${message}`);
  }
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Explicit config file (--config); default AGENTSVC_HOME/config.json when present. */
  configFile?: string;
  /** Flag values (e.g. --port), winning over env and file. */
  overrides?: Partial<Record<keyof typeof settings, string | number | boolean | undefined>>;
}

function readFile(path: string): Record<string, unknown> {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError('--config', `cannot read ${path}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    throw new ConfigError(path, `not valid JSON (${(e as Error).message})`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(path, 'must be a JSON object');
  for (const [alias, key] of Object.entries(FILE_ALIASES)) {
    if (!(alias in parsed)) continue;
    if (key in parsed) throw new ConfigError(alias, `${path} sets both ${alias} and ${key}`);
    (parsed as Record<string, unknown>)[key] = (parsed as Record<string, unknown>)[alias];
    delete (parsed as Record<string, unknown>)[alias];
  }
  for (const key of Object.keys(parsed)) {
    if (!(key in settings)) throw new ConfigError(key, `unknown setting in ${path}`);
  }
  return parsed as Record<string, unknown>;
}

// JSON settings may hold credentials (MCP headers, env): only their names are shown.
const shown = (x: unknown) => (x === undefined || x === null ? '' : typeof x === 'object' ? Object.keys(x).join(',') : String(x));

function describe(values: Record<string, unknown>): SettingItem[] {
  return (Object.keys(settings) as (keyof typeof settings)[]).map((k) => {
    const d = (settings[k] as z.ZodType).safeParse(undefined);
    return { env_var: k, value: shown(values[k]), default: d.success ? shown(d.data) : '' };
  });
}

/** A JSON setting's own check, as a ConfigError naming it. */
function parsed<T>(setting: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    throw new ConfigError(setting, (e as Error).message);
  }
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const pick = (k: keyof typeof settings, file: Record<string, unknown>) => {
    const o = opts.overrides?.[k];
    if (o !== undefined) return o;
    const e = env[k];
    if (e !== undefined && e !== '') return e;
    return file[k];
  };
  const homeGuess = (opts.overrides?.AGENTSVC_HOME as string) || env.AGENTSVC_HOME || join(homedir(), '.agentsvc');
  const filePath = opts.configFile ? resolve(opts.configFile) : join(homeGuess, 'config.json');
  const file = opts.configFile || existsSync(filePath) ? readFile(filePath) : {};

  const s = {} as Record<string, unknown>;
  for (const key of Object.keys(settings) as (keyof typeof settings)[]) {
    const r = (settings[key] as z.ZodType).safeParse(pick(key, file));
    if (!r.success) throw new ConfigError(key, r.error.issues.map((i) => i.message).join('; '));
    s[key] = r.data;
  }
  const v = s as Settings;
  const entries = parsed('AGENTSVC_MODELS', () =>
    parseModels(v.AGENTSVC_MODELS, { baseUrl: v.OPENAI_BASE_URL, apiKey: v.OPENAI_API_KEY, contextWindow: v.AGENTSVC_CONTEXT_WINDOW, env }),
  );
  if (!entries.some((m) => m.id === v.AGENTSVC_MODEL)) {
    entries.unshift({ id: v.AGENTSVC_MODEL, baseUrl: v.OPENAI_BASE_URL, apiKey: v.OPENAI_API_KEY, contextWindow: v.AGENTSVC_CONTEXT_WINDOW, price: null, fallback: [] });
  }
  const models = entries.map((m) => m.id);
  const budgets = parsed('AGENTSVC_BUDGETS', () => parseBudgets(v.AGENTSVC_BUDGETS));
  if (v.AGENTSVC_SEARCH_BACKEND && v.AGENTSVC_SEARCH_BACKEND !== 'searxng' && !v.AGENTSVC_SEARCH_API_KEY) {
    throw new ConfigError('AGENTSVC_SEARCH_API_KEY', `required for search backend ${v.AGENTSVC_SEARCH_BACKEND}`);
  }
  if (v.AGENTSVC_SEARCH_BACKEND === 'searxng' && !v.AGENTSVC_SEARCH_URL) {
    throw new ConfigError('AGENTSVC_SEARCH_URL', 'required for search backend searxng');
  }
  const fail = (setting: string, message: string): never => {
    throw new ConfigError(setting, message);
  };
  const oidc = oidcSettings(
    {
      issuer: v.AGENTSVC_OIDC_ISSUER,
      clientId: v.AGENTSVC_OIDC_CLIENT_ID,
      clientSecret: v.AGENTSVC_OIDC_CLIENT_SECRET,
      name: v.AGENTSVC_OIDC_NAME,
      scopes: v.AGENTSVC_OIDC_SCOPES,
      roles: v.AGENTSVC_OIDC_ROLES,
    },
    fail,
  );
  return {
    settings: describe(s),
    home: resolve(v.AGENTSVC_HOME),
    workspaces: resolve(v.AGENTSVC_WORKSPACES ?? join(v.AGENTSVC_HOME, 'workspaces')),
    host: v.AGENTSVC_HOST,
    port: v.AGENTSVC_PORT,
    logLevel: v.AGENTSVC_LOG_LEVEL,
    logMaxBytes: v.AGENTSVC_LOG_MAX_BYTES,
    shutdownSeconds: v.AGENTSVC_SHUTDOWN_SECONDS,
    databaseUrl: v.DATABASE_URL,
    redisUrl: v.REDIS_URL,
    nodeStaleSeconds: v.AGENTSVC_NODE_STALE_SECONDS,
    model: {
      baseUrl: v.OPENAI_BASE_URL,
      apiKey: v.OPENAI_API_KEY,
      default: v.AGENTSVC_MODEL,
      models,
      entries,
      retries: v.AGENTSVC_MODEL_RETRIES,
      contextWindow: v.AGENTSVC_CONTEXT_WINDOW,
      maxCallsPerRun: v.AGENTSVC_MAX_MODEL_CALLS,
      timeoutMs: v.AGENTSVC_MODEL_TIMEOUT_MS,
      maxForkDepth: v.AGENTSVC_MAX_FORK_DEPTH,
    },
    runLimits: {
      maxSeconds: v.AGENTSVC_RUN_MAX_SECONDS,
      maxToolCalls: v.AGENTSVC_RUN_MAX_TOOL_CALLS,
      loopRepeats: v.AGENTSVC_LOOP_REPEATS,
    },
    runner: {
      kind: v.AGENTSVC_RUNNER,
      image: v.AGENTSVC_RUNNER_IMAGE,
      network: v.AGENTSVC_RUNNER_NETWORK,
      allowUnconfined: v.AGENTSVC_ALLOW_UNCONFINED,
      idleMs: v.AGENTSVC_RUNNER_IDLE_MS,
      memoryBytes: v.AGENTSVC_RUNNER_MEMORY_MB * MiB,
      nanoCpus: Math.round(v.AGENTSVC_RUNNER_CPUS * 1e9),
      pidsLimit: v.AGENTSVC_RUNNER_PIDS,
      dockerHost: v.DOCKER_HOST,
    },
    limits: {
      body: v.AGENTSVC_BODY_LIMIT,
      file: v.AGENTSVC_FILE_LIMIT,
      snapshotFile: v.AGENTSVC_SNAPSHOT_FILE_LIMIT,
      upload: v.AGENTSVC_UPLOAD_LIMIT,
      uploadFiles: v.AGENTSVC_UPLOAD_MAX_FILES,
      uploadTotal: v.AGENTSVC_UPLOAD_MAX_TOTAL,
      socketMessage: v.AGENTSVC_SOCKET_MESSAGE_LIMIT,
      socketBuffer: v.AGENTSVC_SOCKET_BUFFER_BYTES,
      toolOutput: v.AGENTSVC_TOOL_OUTPUT_LIMIT,
      bashTimeoutMs: v.AGENTSVC_BASH_TIMEOUT_MS,
      socketsPerUser: v.AGENTSVC_MAX_SOCKETS_PER_USER,
      ratePerMinute: v.AGENTSVC_RATE_LIMIT_PER_MINUTE,
    },
    background: { maxTasks: v.AGENTSVC_BACKGROUND_MAX_TASKS, maxLifetimeMs: v.AGENTSVC_BACKGROUND_MAX_MS, outputBytes: v.AGENTSVC_BACKGROUND_OUTPUT_BYTES },
    web: {
      allowPrivate: v.AGENTSVC_WEBFETCH_ALLOW_PRIVATE,
      searchBackend: v.AGENTSVC_SEARCH_BACKEND,
      searchUrl: v.AGENTSVC_SEARCH_URL,
      searchApiKey: v.AGENTSVC_SEARCH_API_KEY,
    },
    chat: { runsPerUser: v.AGENTSVC_MAX_RUNS_PER_USER, startsAtOnce: v.AGENTSVC_RUN_STARTS_AT_ONCE, subscriptionsPerSocket: v.AGENTSVC_MAX_SUBSCRIPTIONS_PER_SOCKET },
    replayTtlHours: v.AGENTSVC_REPLAY_TTL_HOURS,
    schedulerPollMs: v.AGENTSVC_SCHEDULER_POLL_MS,
    webhooks: { allowPrivate: v.AGENTSVC_WEBHOOK_ALLOW_PRIVATE, retryBaseMs: v.AGENTSVC_WEBHOOK_RETRY_BASE_MS },
    compaction: { at: v.AGENTSVC_COMPACT_AT, keepTurns: v.AGENTSVC_COMPACT_KEEP_TURNS },
    toolSearch: { directMax: v.AGENTSVC_TOOLS_DIRECT_MAX },
    memoryTopK: v.AGENTSVC_MEMORY_TOP_K,
    plugins: v.AGENTSVC_PLUGINS.split(',').map((p) => p.trim()).filter(Boolean),
    pluginOptions: v.AGENTSVC_PLUGIN_OPTIONS,
    mcp: { servers: v.AGENTSVC_MCP_SERVERS, timeoutMs: v.AGENTSVC_MCP_TIMEOUT_MS },
    integrations: v.AGENTSVC_INTEGRATIONS,
    policy: v.AGENTSVC_POLICY,
    skills: { promptTokens: v.AGENTSVC_SKILLS_PROMPT_TOKENS, uploadBytes: v.AGENTSVC_SKILL_UPLOAD_LIMIT },
    publicSharing: v.AGENTSVC_PUBLIC_SHARING,
    metricsToken: v.AGENTSVC_METRICS_TOKEN,
    secretKey: { current: v.AGENTSVC_SECRET_KEY, previous: v.AGENTSVC_SECRET_KEY_PREVIOUS },
    retention: { days: v.AGENTSVC_RETENTION_DAYS, checkpointKeep: v.AGENTSVC_CHECKPOINT_KEEP },
    userQuotaBytes: v.AGENTSVC_USER_QUOTA_BYTES,
    importLimits: { entries: v.AGENTSVC_IMPORT_MAX_ENTRIES, bytes: v.AGENTSVC_IMPORT_MAX_BYTES },
    share: { ttlSeconds: v.AGENTSVC_SHARE_TTL_SECONDS, publicUrl: v.AGENTSVC_PUBLIC_URL?.replace(/\/$/, '') },
    memoryEnabled: v.AGENTSVC_MEMORY_ENABLED,
    budgets,
    identity: { oidc, keySignin: v.AGENTSVC_KEY_SIGNIN, idleHours: v.AGENTSVC_SIGNIN_IDLE_HOURS, maxDays: v.AGENTSVC_SIGNIN_MAX_DAYS, trustProxy: v.AGENTSVC_TRUST_PROXY },
    timeZone: v.AGENTSVC_TIMEZONE,
    file: Object.keys(file).length ? filePath : undefined,
  };
}

/** Names and defaults, for docs/configuration.md's table and `agentsvc up --help`. */
export const settingNames = Object.keys(settings);
