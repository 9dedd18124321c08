import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { messagesTokens, countTokens } from './tokenizer.js';
import { ModelError, type ModelDelta, type ModelRequest, toOpenAIMessages, toOpenAITools } from './port.js';
import { ToolCallIndexer } from './tool-call-index.js';

/** What providers add to a chunk beyond OpenAI's own fields. */
type ProviderChunk = ChatCompletionChunk & {
  /** Groq sends its usage here, not in `usage`. */
  x_groq?: { usage?: WireUsage };
};
type WireUsage = {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  /** DeepSeek's count of cached prompt tokens. */
  prompt_cache_hit_tokens?: number;
};
type ProviderDelta = ChatCompletionChunk.Choice.Delta & {
  reasoning_content?: string | null;
  reasoning?: string | null;
  /** LiteLLM (Anthropic models): thinking as blocks, sometimes without reasoning_content. */
  thinking_blocks?: { type?: string; thinking?: string }[] | null;
};

/** Statuses worth another try (docs/models-and-usage.md): the request may succeed as it is, later. */
const RETRYABLE = new Set([408, 409, 429]);
const MAX_RETRY_AFTER_MS = 60_000;

/** `retry-after-ms`, else `retry-after` (seconds or an HTTP date), capped at a minute. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | null {
  if (!headers) return null;
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.min(ms, MAX_RETRY_AFTER_MS);
  const raw = headers.get('retry-after');
  if (!raw) return null;
  const s = Number.parseFloat(raw);
  if (Number.isFinite(s) && s >= 0) return Math.min(s * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS) : null;
}

function usageDelta(u: WireUsage): ModelDelta {
  const cached = u.prompt_tokens_details?.cached_tokens ?? u.prompt_cache_hit_tokens ?? 0;
  return { type: 'usage', input_tokens: u.prompt_tokens ?? 0, output_tokens: u.completion_tokens ?? 0, cached_input_tokens: cached };
}

/**
 * One streamed request to one OpenAI-compatible endpoint (no retries: the router decides), with
 * the providers' stream shapes made uniform: every tool call gets its own index (Ollama sends
 * whole calls without one, or several with index 0 and their own ids), Groq's `x_groq.usage` is
 * usage, a stream that ends cleanly (`[DONE]`) without a finish_reason is finished, and when the
 * server reports no usage the tokenizer estimates it once the stream has ended.
 */
/** The endpoint as a person can name it in an error: its URL without credentials or query. */
export function endpointOf(client: { baseURL: string }): string {
  try {
    const u = new URL(client.baseURL);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'the model endpoint';
  }
}

/** What to do about a refusal, by its HTTP status (docs/errors.md: a message a person can act on). */
function statusHint(status: number, model: string): string {
  if (status === 401 || status === 403) return ' (check the API key: OPENAI_API_KEY, or the key_env of this model in AGENTSVC_MODELS)';
  if (status === 404) return ` (check that the endpoint serves the model ${model}, and OPENAI_BASE_URL)`;
  if (status === 429) return ' (rate limited by the provider)';
  return '';
}

export async function* streamOnce(client: OpenAI, model: string, req: ModelRequest, timeoutMs: number): AsyncGenerator<ModelDelta> {
  // A stream that goes silent for the whole timeout is as dead as one that never started.
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(req.signal.reason);
  req.signal.addEventListener('abort', onAbort, { once: true });
  // A run stopped before its model call began (chat:stop, shutdown) never fires the listener.
  if (req.signal.aborted) onAbort();
  let idle: NodeJS.Timeout | undefined;
  let timedOut = false;
  // Re-armed on every chunk: the same timer restarted (no new timer per delta).
  const arm = () => {
    if (idle) idle.refresh();
    else
      idle = setTimeout(() => {
        timedOut = true;
        ctl.abort(new Error('model timeout'));
      }, timeoutMs);
  };
  const params: ChatCompletionCreateParamsStreaming = {
    model,
    messages: toOpenAIMessages(req.messages),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (req.tools?.length) params.tools = toOpenAITools(req.tools);
  if (req.jsonSchema) params.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: req.jsonSchema, strict: false } };
  const timeout = () => new ModelError('MODEL_TIMEOUT', `the model sent nothing for ${timeoutMs} ms`);
  const calls = new ToolCallIndexer();
  let finished = false;
  let usage = false;
  let sawDelta = false;
  let chunks = 0;
  // Output kept only for an estimate when the server reports no usage (counted after the stream).
  const out: string[] = [];
  try {
    arm();
    const stream = await client.chat.completions.create(params, { signal: ctl.signal });
    for await (const chunk of stream as AsyncIterable<ProviderChunk>) {
      arm();
      chunks++;
      const u = chunk.usage ?? chunk.x_groq?.usage;
      if (u) {
        usage = true;
        yield usageDelta(u);
      }
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta as ProviderDelta | undefined;
      const reasoning = delta?.reasoning_content ?? delta?.reasoning ?? thinkingText(delta?.thinking_blocks);
      if (reasoning) {
        sawDelta = true;
        out.push(reasoning);
        yield { type: 'thinking', text: reasoning };
      }
      if (delta?.content) {
        sawDelta = true;
        out.push(delta.content);
        yield { type: 'text', text: delta.content };
      }
      for (const tc of delta?.tool_calls ?? []) {
        sawDelta = true;
        const name = tc.function?.name ?? undefined;
        const args = tc.function?.arguments ?? undefined;
        if (name) out.push(name);
        if (args) out.push(args);
        yield { type: 'tool_call', index: calls.indexOf(tc.index, tc.id), id: tc.id ?? undefined, name, args };
      }
      if (choice.finish_reason && !finished) {
        finished = true;
        yield { type: 'finish', reason: choice.finish_reason };
      }
    }
  } catch (e) {
    if (req.signal.aborted) {
      // Stopped mid-answer: what streamed was generated (and is billed); the provider's usage
      // comes only at the end, so it is counted here.
      if (!usage && sawDelta) yield estimate(req, out);
      throw req.signal.reason ?? e;
    }
    if (timedOut) throw timeout();
    if (e instanceof OpenAI.APIError && e.status) {
      const again = RETRYABLE.has(e.status) || e.status >= 500;
      throw new ModelError('MODEL_ERROR', `model endpoint ${endpointOf(client)} answered ${e.status}: ${e.message}${statusHint(e.status, model)}`, again ? { afterMs: retryAfterMs(e.headers) } : undefined);
    }
    if (e instanceof OpenAI.APIConnectionTimeoutError) throw timeout();
    // A refused or cut connection: worth a retry only while nothing of the answer has come.
    const where = sawDelta ? `model stream from ${endpointOf(client)} broke` : `could not reach the model endpoint ${endpointOf(client)}`;
    const hint = sawDelta ? '' : ' (is it running? `agentsvc doctor` checks OPENAI_BASE_URL)';
    throw new ModelError('MODEL_STREAM_BROKEN', `${where}: ${(e as Error).message}${hint}`, sawDelta ? undefined : { afterMs: null });
  } finally {
    clearTimeout(idle);
    req.signal.removeEventListener('abort', onAbort);
  }
  // The SDK's stream ends quietly when aborted mid-body: say why it ended. A cut connection
  // throws above; what ends without an error ended with the server's `[DONE]`: a clean end.
  if (req.signal.aborted) {
    if (!usage && sawDelta) yield estimate(req, out);
    throw req.signal.reason ?? new Error('aborted');
  }
  if (timedOut) throw timeout();
  // 200 and a stream with no chunk at all (nothing, or only `[DONE]`) is no answer: a failed call
  // (worth a retry, nothing was streamed), not an empty completed turn.
  if (!chunks) throw new ModelError('MODEL_STREAM_BROKEN', `model endpoint ${endpointOf(client)} answered an empty stream (no chunk)`, { afterMs: null });
  if (!usage) yield estimate(req, out);
  if (!finished) yield { type: 'finish', reason: calls.count ? 'tool_calls' : 'stop' };
}

function thinkingText(blocks: ProviderDelta['thinking_blocks']): string | undefined {
  if (!blocks?.length) return undefined;
  return blocks.map((b) => b.thinking ?? '').join('') || undefined;
}

/** Counts from our tokenizer (o200k) when the server sent none (docs/models-and-usage.md: `estimated: true`). */
function estimate(req: ModelRequest, out: string[]): ModelDelta {
  const tools = req.tools?.length ? countTokens(JSON.stringify(toOpenAITools(req.tools))) : 0;
  return { type: 'usage', input_tokens: messagesTokens(req.messages) + tools, output_tokens: countTokens(out.join('')), estimated: true };
}
