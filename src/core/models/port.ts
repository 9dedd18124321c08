import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
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
  /** `estimated`: counted by our tokenizer because the server reported none. */
  | { type: 'usage'; input_tokens: number; output_tokens: number; cached_input_tokens?: number; estimated?: boolean }
  /**
   * Which model answers (the router's choice down a fallback list), sent once before its first
   * delta; `attempts` counts the requests it took, retries and fallbacks included; `credential`
   * says whose key paid: a key of `ModelRequest.credentials` (`personal`) or the entry's own.
   */
  | { type: 'model'; model: string; attempts: number; fallback_from?: string; credential?: 'personal' | 'install' }
  | { type: 'finish'; reason: string };

export interface ModelRequest {
  model: string;
  messages: ModelMessage[];
  tools?: ToolSpec[];
  /** JSON Schema for structured output (response_format json_schema). */
  jsonSchema?: Record<string, unknown>;
  signal: AbortSignal;
  /**
   * API keys by model entry id that replace the entries' own for this request (a user's personal
   * keys, the `model.credentials` hook). A fallback entry whose `personalKey` is `required` and that
   * has none here is skipped.
   */
  credentials?: ReadonlyMap<string, string>;
}

/** A model failure: reported as system:error with this code, and the run fails. */
export class ModelError extends Error {
  /** Requests made before giving up (retries and fallbacks included); set by the router. */
  attempts?: number;

  constructor(
    readonly code: 'MODEL_ERROR' | 'MODEL_TIMEOUT' | 'MODEL_STREAM_BROKEN' | 'OUTPUT_SCHEMA_INVALID',
    message: string,
    /** Worth another try before the first delta (connection error, 408, 409, 429, 5xx), and how long the server asked to wait. */
    readonly retry?: { afterMs: number | null },
  ) {
    super(message);
  }
}

export interface ModelPort extends CompletionPort {
  stream(req: ModelRequest): AsyncIterable<ModelDelta>;
}
