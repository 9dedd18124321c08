import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { Config } from '../config/index.js';
import type { CompletionPort, ToolSpec } from '../tools/types.js';

/** Our own message shape: the model port is not tied to one SDK's types. */
export type ModelContent = string | ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } })[];

export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: ModelContent }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; name: string; arguments: string }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Chat Completions wire form of our messages. */
export function toOpenAIMessages(messages: ModelMessage[]): ChatCompletionMessageParam[] {
  return messages.map((m) => {
    if (m.role !== 'assistant' || !m.tool_calls?.length) return m as ChatCompletionMessageParam;
    return { role: 'assistant', content: m.content, tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) };
  });
}

/** Chat Completions wire form of tool specs (also what token counts of `tools` measure). */
export function toOpenAITools(tools: ToolSpec[]): ChatCompletionTool[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

export type ModelDelta =
  | { type: 'text'; text: string }
  | { type: 'thinking'; text: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; args?: string }
  | { type: 'usage'; input_tokens: number; output_tokens: number }
  | { type: 'finish'; reason: string };

export interface ModelRequest {
  model: string;
  messages: ModelMessage[];
  tools?: ToolSpec[];
  /** JSON Schema for structured output (response_format json_schema). */
  jsonSchema?: Record<string, unknown>;
  signal: AbortSignal;
}

/** A model failure: reported as system:error with this code, and the run fails. */
export class ModelError extends Error {
  constructor(
    readonly code: 'MODEL_ERROR' | 'MODEL_TIMEOUT' | 'MODEL_STREAM_BROKEN' | 'OUTPUT_SCHEMA_INVALID',
    message: string,
  ) {
    super(message);
  }
}

export interface ModelPort extends CompletionPort {
  stream(req: ModelRequest): AsyncIterable<ModelDelta>;
}

/** The model port over any OpenAI-compatible Chat Completions endpoint, streamed. */
export class OpenAIModel implements ModelPort {
  private client: OpenAI;

  constructor(private readonly config: Config['model']) {
    this.client = new OpenAI({ baseURL: config.baseUrl, apiKey: config.apiKey || 'unset', maxRetries: 1, timeout: config.timeoutMs });
  }

  async *stream(req: ModelRequest): AsyncIterable<ModelDelta> {
    // A stream that goes silent for the whole timeout is as dead as one that never started.
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(req.signal.reason);
    req.signal.addEventListener('abort', onAbort, { once: true });
    // A run stopped before its model call began (chat:stop, shutdown) never fires the listener.
    if (req.signal.aborted) onAbort();
    let idle: NodeJS.Timeout | undefined;
    let timedOut = false;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        timedOut = true;
        ctl.abort(new Error('model timeout'));
      }, this.config.timeoutMs);
    };
    const params: ChatCompletionCreateParamsStreaming = {
      model: req.model,
      messages: toOpenAIMessages(req.messages),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (req.tools?.length) params.tools = toOpenAITools(req.tools);
    if (req.jsonSchema) params.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: req.jsonSchema, strict: false } };
    let finished = false;
    try {
      arm();
      const stream = await this.client.chat.completions.create(params, { signal: ctl.signal });
      for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) {
        arm();
        if (chunk.usage) yield { type: 'usage', input_tokens: chunk.usage.prompt_tokens ?? 0, output_tokens: chunk.usage.completion_tokens ?? 0 };
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta as ChatCompletionChunk.Choice.Delta & { reasoning_content?: string | null; reasoning?: string | null };
        const reasoning = delta?.reasoning_content ?? delta?.reasoning;
        if (reasoning) yield { type: 'thinking', text: reasoning };
        if (delta?.content) yield { type: 'text', text: delta.content };
        for (const tc of delta?.tool_calls ?? []) {
          yield { type: 'tool_call', index: tc.index, id: tc.id ?? undefined, name: tc.function?.name ?? undefined, args: tc.function?.arguments ?? undefined };
        }
        if (choice.finish_reason) {
          finished = true;
          yield { type: 'finish', reason: choice.finish_reason };
        }
      }
    } catch (e) {
      if (req.signal.aborted) throw req.signal.reason ?? e;
      if (timedOut) throw new ModelError('MODEL_TIMEOUT', `the model sent nothing for ${this.config.timeoutMs} ms`);
      if (e instanceof OpenAI.APIError && e.status) throw new ModelError('MODEL_ERROR', `model endpoint answered ${e.status}: ${e.message}`);
      throw new ModelError('MODEL_STREAM_BROKEN', `model stream failed: ${(e as Error).message}`);
    } finally {
      clearTimeout(idle);
      req.signal.removeEventListener('abort', onAbort);
    }
    if (!finished) {
      // The SDK's stream ends quietly when aborted mid-body: say why it ended.
      if (req.signal.aborted) throw req.signal.reason ?? new Error('aborted');
      if (timedOut) throw new ModelError('MODEL_TIMEOUT', `the model sent nothing for ${this.config.timeoutMs} ms`);
      throw new ModelError('MODEL_STREAM_BROKEN', 'model stream ended before a finish_reason');
    }
  }

  async complete(input: { system: string; user: string; signal?: AbortSignal; maxTokens?: number; model?: string }): Promise<string> {
    const r = await this.client.chat.completions.create(
      {
        model: input.model ?? this.config.default,
        messages: [
          { role: 'system', content: input.system },
          { role: 'user', content: input.user },
        ],
        max_tokens: input.maxTokens,
      },
      { signal: input.signal },
    );
    return r.choices[0]?.message?.content ?? '';
  }
}
