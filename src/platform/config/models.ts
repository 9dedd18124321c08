import { z } from 'zod';

/**
 * AGENTSVC_MODELS and AGENTSVC_BUDGETS (docs/models-and-usage.md). AGENTSVC_MODELS keeps its old form (ids
 * separated by commas) and may also be a JSON list of entries with their own endpoint, key (by
 * the name of an environment variable, never the key itself), context window, prices and fallbacks.
 */

/** Prices per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  cached_input: number;
}

export interface ModelEntry {
  id: string;
  baseUrl: string;
  apiKey: string;
  contextWindow: number;
  price: ModelPrice | null;
  /** Ids of other entries tried in order when this one fails before its first delta. */
  fallback: string[];
  /**
   * Whether each user may store their own API key for this entry, used for their calls instead of
   * the install's (`allowed`), or must have one to run it (`required`); absent: never (docs/model-keys.md).
   */
  personalKey?: 'allowed' | 'required';
}

export interface BudgetSpec {
  period: 'day' | 'month' | 'total';
  max_tokens: number | null;
  max_cost: number | null;
}

const price = z
  .object({ input: z.number().min(0), output: z.number().min(0), cached_input: z.number().min(0).optional() })
  .strict()
  .transform((p) => ({ input: p.input, output: p.output, cached_input: p.cached_input ?? p.input }));

const entry = z
  .object({
    id: z.string().min(1).max(200),
    base_url: z
      .string()
      .refine((v) => URL.canParse(v) && ['http:', 'https:'].includes(new URL(v).protocol), 'must be an http(s) URL')
      .optional(),
    api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable').optional(),
    context_window: z.number().int().min(1024).optional(),
    price: price.optional(),
    fallback: z.array(z.string().min(1)).max(10).optional(),
    personal_key: z.enum(['allowed', 'required']).optional(),
  })
  .strict();

export const budgetSpec = z
  .object({
    period: z.enum(['day', 'month', 'total']),
    max_tokens: z.number().int().positive().nullable().optional(),
    max_cost: z.number().positive().nullable().optional(),
  })
  .strict()
  .refine((b) => b.max_tokens != null || b.max_cost != null, 'needs max_tokens or max_cost')
  .transform((b): BudgetSpec => ({ period: b.period, max_tokens: b.max_tokens ?? null, max_cost: b.max_cost ?? null }));

function describe(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ');
}

/** JSON text (the environment) parsed; a value from config.json as it is. */
function jsonText(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch (e) {
    throw new Error(`not valid JSON (${(e as Error).message})`);
  }
}

interface Defaults {
  baseUrl: string;
  apiKey: string;
  contextWindow: number;
  env: NodeJS.ProcessEnv;
}

/** The model list: JSON text or a list (config.json), else ids separated by commas. Throws with a message. */
export function parseModels(raw: unknown, defaults: Defaults): ModelEntry[] {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (raw === undefined || raw === null || (typeof raw === 'string' && !text.startsWith('['))) {
    return text
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean)
      .map((id) => ({ id, baseUrl: defaults.baseUrl, apiKey: defaults.apiKey, contextWindow: defaults.contextWindow, price: null, fallback: [] }));
  }
  const r = z.array(entry).max(100).safeParse(jsonText(raw));
  if (!r.success) throw new Error(describe(r.error));
  const ids = new Set<string>();
  const out = r.data.map((m) => {
    if (ids.has(m.id)) throw new Error(`model ${m.id} is listed twice`);
    ids.add(m.id);
    if (m.api_key_env && defaults.env[m.api_key_env] === undefined) throw new Error(`model ${m.id}: environment variable ${m.api_key_env} is not set`);
    return {
      id: m.id,
      baseUrl: (m.base_url ?? defaults.baseUrl).replace(/\/$/, ''),
      apiKey: m.api_key_env ? (defaults.env[m.api_key_env] ?? '') : m.base_url ? '' : defaults.apiKey,
      contextWindow: m.context_window ?? defaults.contextWindow,
      price: m.price ?? null,
      fallback: m.fallback ?? [],
      ...(m.personal_key ? { personalKey: m.personal_key } : {}),
    };
  });
  for (const m of out) {
    for (const f of m.fallback) {
      if (!ids.has(f)) throw new Error(`model ${m.id}: fallback ${f} is not in the list`);
      if (f === m.id) throw new Error(`model ${m.id}: falls back to itself`);
    }
  }
  return out;
}

/** The install's budgets: a JSON list of `{period, max_tokens?, max_cost?}`. */
export function parseBudgets(raw: unknown): BudgetSpec[] {
  if (raw === undefined || raw === null || raw === '') return [];
  const r = z.array(budgetSpec).max(10).safeParse(jsonText(raw));
  if (!r.success) throw new Error(describe(r.error));
  return r.data;
}

/** What `modelEntry` reads of the model config. */
interface ModelList {
  entries: ModelEntry[];
  baseUrl: string;
  apiKey: string;
  contextWindow: number;
}

/**
 * A model id's entry of the models config (docs/models-and-usage.md); an id not in the list (a session's own
 * choice) uses the default endpoint, key and context window.
 */
export function modelEntry(config: ModelList, id: string, listed?: ReadonlyMap<string, ModelEntry>): ModelEntry {
  const known = listed ? listed.get(id) : config.entries.find((e) => e.id === id);
  return known ?? { id, baseUrl: config.baseUrl, apiKey: config.apiKey, contextWindow: config.contextWindow, price: null, fallback: [] };
}

/** The context window of a model id: its entry's `context_window`, else AGENTSVC_CONTEXT_WINDOW. */
export function contextWindowOf(config: ModelList, id: string | null | undefined): number {
  return id ? modelEntry(config, id).contextWindow : config.contextWindow;
}
