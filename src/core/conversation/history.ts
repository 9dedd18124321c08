import type { ModelContent, ModelMessage } from '../models/port.js';
import type { StoredTurn } from './turn-store.js';
import { turnText, type Turn } from './turns.js';


const CANCELLED = 'cancelled: the tool call did not finish';

/** Tool outputs longer than this are elided in turns a masking compaction covers. */
export const MASK_OVER_CHARS = 300;

export function maskedOutput(tool: string, result: string): string {
  return `[output of ${tool} elided to save context: ${result.length} characters]`;
}

/** The assistant message and tool results of one turn, as the model expects them (`mask`: long outputs elided). */
export function assistantMessages(turn: Turn, mask = false): ModelMessage[] {
  const text = turnText(turn);
  if (!turn.tool_calls.length) return text ? [{ role: 'assistant', content: text }] : [];
  const out: ModelMessage[] = [
    {
      role: 'assistant',
      content: text || null,
      tool_calls: turn.tool_calls.map((c) => ({ id: c.id, name: c.tool_name, arguments: c.arguments })),
    },
  ];
  // The stored list is valid for the model: every call gets exactly one result.
  for (const c of turn.tool_calls) {
    const r = c.result ?? CANCELLED;
    out.push({ role: 'tool', tool_call_id: c.id, content: mask && r.length > MASK_OVER_CHARS ? maskedOutput(c.tool_name, r) : r });
  }
  return out;
}

/** Where the newest masking compaction of a loop reaches: tool outputs of turns before it are elided. */
export function maskedUntil(stored: StoredTurn[], loopId = 'root'): number {
  for (let i = stored.length - 1; i >= 0; i--) {
    const t = stored[i].turn as Turn & { masked_until?: number };
    if (t.loop_id === loopId && t.kind === 'compaction' && t.masked_until !== undefined && !t.failure_reason && !t.deprecated) return Number(t.masked_until);
  }
  return -1;
}

/** The newest compaction of a loop that worked: the model sees its summary instead of what it folded. */
export function lastCompaction(stored: StoredTurn[], loopId = 'root'): (Turn & { archived_until?: number }) | null {
  for (let i = stored.length - 1; i >= 0; i--) {
    const t = stored[i].turn;
    if (t.loop_id === loopId && t.kind === 'compaction' && t.summary_full && !t.failure_reason && !t.deprecated) return t;
  }
  return null;
}

/**
 * Model history of one loop (root, or a sub-agent's own loop) from stored turns. After a
 * compaction: the first user message verbatim, the summary, then the turns it kept and what came
 * after; failed compactions and deprecated entries are left out.
 */
export function toModelMessages(stored: StoredTurn[], loopId = 'root'): ModelMessage[] {
  const out: ModelMessage[] = [];
  const compaction = lastCompaction(stored, loopId);
  const cut = compaction ? Number(compaction.archived_until ?? compaction.sequence) : -1;
  const first = stored.find((s) => s.turn.loop_id === loopId && s.turn.role === 'user' && !s.turn.deprecated)?.turn;
  const masked = maskedUntil(stored, loopId);
  for (const { turn, content } of stored) {
    if (turn.loop_id !== loopId || turn.deprecated || turn.kind === 'compaction') continue;
    if (compaction && turn.sequence < cut && turn !== first) continue;
    if (turn.role === 'user') out.push({ role: 'user', content: (content as ModelContent) ?? turnText(turn) });
    else if (turn.role === 'assistant') out.push(...assistantMessages(turn, turn.sequence < masked));
    if (compaction && turn === first) out.push({ role: 'user', content: `Summary of the earlier conversation:\n${compaction.summary_full}` });
  }
  if (compaction && !first) out.unshift({ role: 'user', content: `Summary of the earlier conversation:\n${compaction.summary_full}` });
  return out;
}
