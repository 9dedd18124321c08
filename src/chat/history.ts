import type { ModelContent, ModelMessage } from './model.js';
import type { StoredTurn } from './turn-store.js';
import { turnText, type Turn } from './turns.js';


const CANCELLED = 'cancelled: the tool call did not finish';

/** The assistant message and tool results of one turn, as the model expects them. */
export function assistantMessages(turn: Turn): ModelMessage[] {
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
  for (const c of turn.tool_calls) out.push({ role: 'tool', tool_call_id: c.id, content: c.result ?? CANCELLED });
  return out;
}

/** Model history of one loop (root, or a sub-agent's own loop) from stored turns. */
export function toModelMessages(stored: StoredTurn[], loopId = 'root'): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const { turn, content } of stored) {
    if (turn.loop_id !== loopId || turn.deprecated) continue;
    if (turn.kind === 'compaction') {
      if (turn.summary_full) out.push({ role: 'user', content: `Summary of the earlier conversation:\n${turn.summary_full}` });
      continue;
    }
    if (turn.role === 'user') out.push({ role: 'user', content: (content as ModelContent) ?? turnText(turn) });
    else if (turn.role === 'assistant') out.push(...assistantMessages(turn));
  }
  return out;
}
