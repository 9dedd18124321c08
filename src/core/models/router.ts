import OpenAI from 'openai';
import type { Config } from '../../platform/config/index.js';
import { modelEntry, type ModelEntry } from '../../platform/config/models.js';
import { ModelError, type ModelDelta, type ModelPort, type ModelRequest } from './port.js';
import { backoffMs, sleepUnlessAborted } from './backoff.js';
import { streamOnce } from './openai-stream.js';

/** One try of the plan: which model, and how long to wait before it. */
interface Attempt {
  entry: ModelEntry;
  /** 0 for a model's first try. */
  retry: number;
}

/**
 * The model port over several OpenAI-compatible endpoints (docs/models-and-usage.md). A call that fails before
 * its first delta with a retryable error is retried (exponential backoff with jitter, at least the
 * server's retry-after), then each model of its `fallback` list is tried the same way. After the
 * first delta nothing is retried: the answer so far is already the client's. The retries are ours
 * (the SDK's own are off) so that a wait ends the moment the run is stopped.
 */
export class ModelRouter implements ModelPort {
  private readonly entries = new Map<string, ModelEntry>();
  private readonly clients = new Map<string, OpenAI>();

  constructor(private readonly config: Config['model']) {
    for (const e of config.entries) this.entries.set(e.id, e);
  }

  /** The entry of a model id; an id not in the list (a session's own choice) uses the default endpoint. */
  entry(id: string): ModelEntry {
    return modelEntry(this.config, id, this.entries);
  }

  /** The client of an endpoint and key; a personal key's client is made per request, never kept. */
  private client(e: ModelEntry, personal?: string): OpenAI {
    if (personal) return new OpenAI({ baseURL: e.baseUrl, apiKey: personal, maxRetries: 0, timeout: this.config.timeoutMs });
    const key = `${e.baseUrl}\n${e.apiKey}`;
    let c = this.clients.get(key);
    if (!c) {
      c = new OpenAI({ baseURL: e.baseUrl, apiKey: e.apiKey || 'unset', maxRetries: 0, timeout: this.config.timeoutMs });
      this.clients.set(key, c);
    }
    return c;
  }

  /**
   * The model, then its fallbacks, each up to 1 + retries times; a fallback that requires a personal
   * key the request does not carry is left out (the caller refused the model itself before the run).
   */
  private *plan(model: string, credentials?: ReadonlyMap<string, string>): Generator<Attempt> {
    const first = this.entry(model);
    const fallbacks = first.fallback.map((id) => this.entry(id)).filter((e) => e.personalKey !== 'required' || credentials?.has(e.id));
    for (const entry of [first, ...fallbacks]) {
      for (let retry = 0; retry <= this.config.retries; retry++) yield { entry, retry };
    }
  }

  /**
   * The stream of the first attempt that yields a delta. Past that delta the iterator hands out
   * the adapter's own `next()`: the router adds nothing per delta (a generator layer cost about
   * a fifth of the deltas/s of a 200-session burst).
   */
  stream(req: ModelRequest): AsyncIterable<ModelDelta> {
    return { [Symbol.asyncIterator]: () => this.iterate(req) };
  }

  private iterate(req: ModelRequest): AsyncIterator<ModelDelta> {
    let inner: AsyncIterator<ModelDelta> | null = null;
    let queued: ModelDelta[] = [];
    let opening: Promise<void> | null = null;
    const open = () =>
      (opening ??= this.open(req).then((o) => {
        inner = o.iterator;
        queued = o.queued;
      }));
    const slow = async (): Promise<IteratorResult<ModelDelta>> => {
      await open();
      const value = queued.shift();
      return value ? { value, done: false } : inner!.next();
    };
    return {
      next: () => (inner && !queued.length ? inner.next() : slow()),
      return: async (value?: unknown) => {
        await inner?.return?.(value);
        return { value: undefined, done: true };
      },
    };
  }

  /** Try the plan until an attempt yields its first delta: that attempt's iterator, and what to hand out first. */
  private async open(req: ModelRequest): Promise<{ iterator: AsyncIterator<ModelDelta>; queued: ModelDelta[] }> {
    let attempts = 0;
    let last: ModelError | undefined;
    for (const a of this.plan(req.model, req.credentials)) {
      if (last && a.retry > 0) await sleepUnlessAborted(Math.max(backoffMs(a.retry), last.retry?.afterMs ?? 0), req.signal);
      attempts++;
      const personal = req.credentials?.get(a.entry.id);
      const iterator = streamOnce(this.client(a.entry, personal), a.entry.id, req, this.config.timeoutMs);
      try {
        const first = await iterator.next();
        const answering: ModelDelta = {
          type: 'model',
          model: a.entry.id,
          attempts,
          credential: personal ? 'personal' : 'install',
          ...(a.entry.id !== req.model ? { fallback_from: req.model } : {}),
        };
        return { iterator, queued: first.done ? [answering] : [answering, first.value] };
      } catch (e) {
        if (!(e instanceof ModelError) || !e.retry) throw counted(e, attempts);
        last = e;
      }
    }
    throw counted(last, attempts);
  }

  async complete(input: { system: string; user: string; signal?: AbortSignal; maxTokens?: number; model?: string }): Promise<string> {
    const signal = input.signal ?? new AbortController().signal;
    let last: unknown;
    for (const a of this.plan(input.model ?? this.config.default)) {
      if (last && a.retry > 0) await sleepUnlessAborted(backoffMs(a.retry), signal);
      try {
        const r = await this.client(a.entry).chat.completions.create(
          {
            model: a.entry.id,
            messages: [
              { role: 'system', content: input.system },
              { role: 'user', content: input.user },
            ],
            max_tokens: input.maxTokens,
          },
          { signal },
        );
        return r.choices[0]?.message?.content ?? '';
      } catch (e) {
        const status = e instanceof OpenAI.APIError ? e.status : undefined;
        if (signal.aborted || (status !== undefined && status < 500 && ![408, 409, 429].includes(status))) throw e;
        last = e;
      }
    }
    throw last;
  }
}

function counted(e: unknown, attempts: number) {
  if (e instanceof ModelError) e.attempts = attempts;
  return e;
}
