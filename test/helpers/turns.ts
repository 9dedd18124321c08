import type { Turn } from '../../src/core/conversation/turns.js';
import { COMPACTION_FIELDS } from '../../src/core/conversation/turns.js';

/** A completed root-loop turn to insert straight into the turns store (`id`: the suffix of its ids). */
export function storedTurn(id: string, sequence: number, role: Turn['role'], text: string, extra: Partial<Turn> = {}): Turn {
  return {
    id: `entry_${id}`,
    sequence,
    turn_id: `turn_${id}`,
    loop_id: 'root',
    kind: 'message',
    role,
    status: 'completed',
    blocks: text ? [{ type: 'text', content: text, tool_call_id: null, tool_name: null, display_name: null }] : [],
    tool_calls: [],
    model: 'm',
    usage: { input_tokens: 1, output_tokens: 2 },
    duration_ms: 3,
    started_at: new Date(Date.UTC(2026, 0, 1, 0, 0, sequence)).toISOString(),
    context_window: 1000,
    memory_refs: null,
    parent_fork_tool_call_id: null,
    ...COMPACTION_FIELDS,
    ...extra,
  };
}
