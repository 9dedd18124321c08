import { countTokens } from '../../core/models/tokenizer.js';

/**
 * What POST /api/sessions/tokenize/* counts, as plain functions of the request body: run in the
 * request's thread for small bodies and in the counting worker (worker.ts) for large ones.
 * Messages are counted as a chat template renders them: 3 tokens of framing per message plus its
 * role and content (plus 1 and the name when named), and the tools' JSON when given. An image part
 * counts 85 tokens (a low-detail image; providers count high-detail images by tiles, which the URL
 * alone cannot tell).
 */

const PER_MESSAGE = 3;
const PER_NAME = 1;
const IMAGE = 85;

export interface CountMessage {
  role: string;
  content: string | ({ type: 'text'; text: string } | { type: 'image_url' })[] | null;
  name?: string;
  tool_calls?: unknown[];
  tool_call_id?: string;
}

export type CountJob = { kind: 'prompt'; prompt: string } | { kind: 'messages'; messages: CountMessage[]; tools?: unknown[] };
export interface Counted {
  /** The prompt's tokens, or the tools' (0 without tools). */
  tokens: number;
  per_message: number[];
}

function messageTokens(m: CountMessage): number {
  let n = PER_MESSAGE + countTokens(m.role);
  if (typeof m.content === 'string') n += countTokens(m.content);
  else if (Array.isArray(m.content)) for (const p of m.content) n += p.type === 'text' ? countTokens(String(p.text)) : IMAGE;
  if (m.name) n += PER_NAME + countTokens(m.name);
  if (m.tool_calls?.length) n += countTokens(JSON.stringify(m.tool_calls));
  if (m.tool_call_id) n += countTokens(m.tool_call_id);
  return n;
}

export function count(job: CountJob): Counted {
  if (job.kind === 'prompt') return { tokens: countTokens(job.prompt), per_message: [] };
  return { tokens: job.tools?.length ? countTokens(JSON.stringify(job.tools)) : 0, per_message: job.messages.map(messageTokens) };
}

/** Characters of text a job holds (what its counting time grows with). */
export function sizeOf(job: CountJob): number {
  if (job.kind === 'prompt') return job.prompt.length;
  let n = job.tools?.length ? JSON.stringify(job.tools).length : 0;
  for (const m of job.messages) {
    n += m.role.length + (m.name?.length ?? 0) + (m.tool_call_id?.length ?? 0) + (m.tool_calls?.length ? JSON.stringify(m.tool_calls).length : 0);
    if (typeof m.content === 'string') n += m.content.length;
    else if (Array.isArray(m.content)) for (const p of m.content) n += p.type === 'text' ? String(p.text).length : 0;
  }
  return n;
}
