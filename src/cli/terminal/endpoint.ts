import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * What `agentsvc init` knows about model endpoints (docs/cli.md, "init"): the presets, the live
 * checks (GET /models, then one small chat completion) and the merge of the model settings into
 * config.json, whose keys are the environment variables' names (src/platform/config/index.ts).
 */

export interface Preset {
  id: string;
  label: string;
  baseUrl: string;
  /** The endpoint refuses requests without a key (a local server takes any, or none). */
  needsKey: boolean;
  /** Model proposed when the endpoint lists none. */
  model: string;
  hint: string;
}

export const PRESETS: Preset[] = [
  { id: 'openai', label: 'OpenAI', baseUrl: 'https://api.openai.com/v1', needsKey: true, model: 'gpt-4o-mini', hint: 'api.openai.com, needs an API key' },
  { id: 'ollama', label: 'Ollama', baseUrl: 'http://127.0.0.1:11434/v1', needsKey: false, model: 'llama3.2', hint: 'local models, `ollama serve`' },
  { id: 'vllm', label: 'vLLM', baseUrl: 'http://127.0.0.1:8000/v1', needsKey: false, model: '', hint: '`vllm serve MODEL`, key if started with --api-key' },
  { id: 'litellm', label: 'LiteLLM', baseUrl: 'http://127.0.0.1:4000/v1', needsKey: true, model: '', hint: 'LiteLLM proxy, its master or virtual key' },
  { id: 'custom', label: 'Other OpenAI-compatible URL', baseUrl: '', needsKey: false, model: '', hint: 'any Chat Completions endpoint with streaming and tools' },
];

export function presetById(id: string): Preset | undefined {
  return PRESETS.find((p) => p.id === id);
}

/** The preset whose URL this is, else `custom`. */
export function presetFor(baseUrl: string): Preset {
  const norm = (u: string) => u.replace(/\/+$/, '');
  return PRESETS.find((p) => p.baseUrl && norm(p.baseUrl) === norm(baseUrl)) ?? presetById('custom')!;
}

/** An http(s) URL, without a trailing slash; null when it is not one. */
export function normalUrl(raw: string): string | null {
  try {
    const u = new URL(raw.trim());
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    return u.toString().replace(/\/+$/, '');
  } catch {
    return null;
  }
}

export type ModelsAnswer =
  | { kind: 'ok'; models: string[] }
  /** 401/403: the key is missing or refused. */
  | { kind: 'auth'; status: number; detail: string }
  /** Answers, but has no usable model list (404, other statuses, not JSON): chat may still work. */
  | { kind: 'nolist'; detail: string }
  | { kind: 'down'; detail: string };

const headers = (apiKey: string): Record<string, string> => ({ 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) });

function reason(e: unknown, ms: number): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  return err.name === 'TimeoutError' ? `no answer within ${ms / 1000} s` : (err.cause?.code ?? err.cause?.message ?? err.message);
}

/** GET {base}/models: the ids it offers, sorted. */
export async function listModels(baseUrl: string, apiKey: string, timeoutMs = 5000): Promise<ModelsAnswer> {
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/models`, { headers: headers(apiKey), signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    return { kind: 'down', detail: `${baseUrl} unreachable: ${reason(e, timeoutMs)}` };
  }
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    return { kind: 'auth', status: res.status, detail: `${baseUrl} answered ${res.status}: ${apiKey ? 'it refused the API key' : 'it needs an API key'}` };
  }
  if (!res.ok) {
    await res.body?.cancel();
    return { kind: 'nolist', detail: `GET ${baseUrl}/models answered ${res.status}` };
  }
  try {
    const body = (await res.json()) as { data?: { id?: unknown }[] };
    const ids = (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string');
    return { kind: 'ok', models: [...new Set(ids)].sort() };
  } catch {
    return { kind: 'nolist', detail: `GET ${baseUrl}/models did not answer a model list` };
  }
}

export type ChatAnswer = { ok: true; ms: number; text: string } | { ok: false; status?: number; detail: string };

/**
 * One small, non-streamed chat completion: the endpoint, key and model work together. No token
 * limit is sent: OpenAI's newer models refuse `max_tokens`, and the answer asked for is one word.
 */
export async function tryChat(baseUrl: string, apiKey: string, model: string, timeoutMs = 30_000): Promise<ChatAnswer> {
  const t0 = Date.now();
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: headers(apiKey),
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Reply with the single word OK.' }], stream: false }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    return { ok: false, detail: `${baseUrl} unreachable: ${reason(e, timeoutMs)}` };
  }
  const raw = await res.text().catch(() => '');
  if (!res.ok) {
    let msg = raw.slice(0, 200);
    try {
      msg = (JSON.parse(raw) as { error?: { message?: string } }).error?.message ?? msg;
    } catch {}
    return { ok: false, status: res.status, detail: `POST ${baseUrl}/chat/completions (model ${model}) answered ${res.status}${msg ? `: ${msg.trim()}` : ''}` };
  }
  try {
    const body = JSON.parse(raw) as { choices?: { message?: { content?: string | null } }[] };
    return { ok: true, ms: Date.now() - t0, text: String(body.choices?.[0]?.message?.content ?? '').trim() };
  } catch {
    return { ok: false, status: res.status, detail: `POST ${baseUrl}/chat/completions answered ${res.status} but not a chat completion` };
  }
}

/** The model settings `init` writes. */
export interface ModelChoice {
  baseUrl: string;
  model: string;
  /** The key the checks used, '' for none; written to config.json (mode 0600) unless one of the two below says otherwise. */
  apiKey: string;
  /** The name of the environment variable that holds the key: written instead of the key. */
  apiKeyEnv?: string;
  /** The key came from OPENAI_API_KEY in the environment, which wins over the file anyway: not written. */
  keyFromEnv?: boolean;
}

/** Keys of config.json that `init` owns; every other key of an existing file is kept as it is. */
const MODEL_KEYS = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'AGENTSVC_MODEL'];

export function readConfigFile(path: string): Record<string, unknown> | null {
  if (!existsSync(path)) return null;
  const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${path} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * `existing` with the model settings of `c`: OPENAI_BASE_URL, AGENTSVC_MODEL and the key. A key
 * held in an environment variable goes in the `models` list (`api_key_env`, the only way the
 * config names a variable), replacing an entry of the same id; a key given as such replaces
 * OPENAI_API_KEY and drops a listed entry of the same id (it would win over the default's URL).
 */
export function mergeModelSettings(existing: Record<string, unknown> | null, c: ModelChoice): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(existing ?? {}) };
  for (const k of MODEL_KEYS) delete out[k];
  const listKey = 'models' in out ? 'models' : 'AGENTSVC_MODELS' in out ? 'AGENTSVC_MODELS' : null;
  const list = listKey && Array.isArray(out[listKey]) ? (out[listKey] as { id?: unknown }[]).filter((m) => m?.id !== c.model) : null;
  out.OPENAI_BASE_URL = c.baseUrl;
  out.AGENTSVC_MODEL = c.model;
  if (c.apiKeyEnv) {
    out[listKey ?? 'models'] = [{ id: c.model, base_url: c.baseUrl, api_key_env: c.apiKeyEnv }, ...(list ?? [])];
  } else {
    if (c.apiKey && !c.keyFromEnv) out.OPENAI_API_KEY = c.apiKey;
    if (listKey && list) {
      if (list.length) out[listKey] = list;
      else delete out[listKey];
    }
  }
  return out;
}

/** Write `value` as JSON, mode 0600 (it may hold a key), through a temporary file and a rename. */
export function writeConfigFile(path: string, value: Record<string, unknown>) {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}

/** Settings in this environment that win over what config.json says. */
export function overriddenBy(env: NodeJS.ProcessEnv): string[] {
  return ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'AGENTSVC_MODEL', 'AGENTSVC_MODELS'].filter((k) => env[k]);
}
