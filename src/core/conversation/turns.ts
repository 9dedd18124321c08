/**
 * The Turn projection (docs/sessions-and-runs.md "Turn projection") and the one reducer that builds it from patches.
 * The loop applies each patch here before sending it, so the stored turn and what a client builds
 * from the events are the same by construction.
 */

export type TurnStatus = 'streaming' | 'completed' | 'paused' | 'failed' | 'interrupted';
export type ToolCallStatus = 'pending' | 'done' | 'error' | 'cancelled' | 'awaiting_answer';

export interface Block {
  type: 'text' | 'thinking' | 'tool_use' | 'tool_result' | 'image';
  content: string;
  tool_call_id: string | null;
  tool_name: string | null;
  display_name: string | null;
}

export interface ToolCall {
  id: string;
  tool_name: string;
  display_name: string;
  arguments: string;
  status: ToolCallStatus;
  result: string | null;
  duration_ms: number;
  /**
   * What the call waits for: its own id for an AskUserQuestion, or a policy approval
   * `{type: "approval", ...}` (docs/policy.md).
   */
  pending_question_ref: string | PendingApproval | null;
}

/** An `ask` of the tool policy: the call waits for a person's Allow once / for this session / Deny. */
export type PendingApproval = { type: 'approval'; tool_call_id: string } & Record<string, unknown>;

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface Turn {
  id: string;
  sequence: number;
  turn_id: string;
  loop_id: string;
  kind: 'message' | 'compaction';
  role: 'user' | 'assistant' | 'system';
  status: TurnStatus;
  blocks: Block[];
  tool_calls: ToolCall[];
  model: string;
  usage: Usage;
  duration_ms: number;
  started_at: string;
  context_window: number;
  memory_refs: unknown[] | null;
  parent_fork_tool_call_id: string | null;
  /** Left out of what the model sees on this branch (a what-if's deprecate_entry_ids). */
  deprecated?: boolean;
  compaction_id: string | null;
  summary_preview: string | null;
  summary_full: string | null;
  archived_count: number | null;
  tokens_before: number | null;
  tokens_after: number | null;
  saved_ratio: number | null;
  trigger: string | null;
  failure_reason: string | null;
}

export type Patch =
  | { patch_type: 'add_content'; data: { text_delta: string } }
  | { patch_type: 'add_thinking'; data: { text_delta: string } }
  | { patch_type: 'add_tool_call'; data: { id: string; tool_name: string; display_name: string; arguments: string; status: ToolCallStatus; question?: PendingApproval } }
  /** `progress`: a note from a long tool (e.g. "Fetching <url>") for clients; not part of the projection. */
  | { patch_type: 'update_tool_call'; data: { id: string; status: ToolCallStatus; progress?: string } }
  | { patch_type: 'tool_result'; data: { tool_call_id: string; result: string; status: ToolCallStatus; duration_ms: number } }
  /** `estimated`: counted by our tokenizer because the provider sent no usage (e.g. a stream stopped early). */
  | { patch_type: 'usage'; data: Usage & { estimated?: boolean } };

export const COMPACTION_FIELDS = {
  compaction_id: null,
  summary_preview: null,
  summary_full: null,
  archived_count: null,
  tokens_before: null,
  tokens_after: null,
  saved_ratio: null,
  trigger: null,
  failure_reason: null,
} as const;

function block(type: Block['type'], content: string, call?: { id: string; tool_name: string; display_name: string }): Block {
  return { type, content, tool_call_id: call?.id ?? null, tool_name: call?.tool_name ?? null, display_name: call?.display_name ?? null };
}

/** Apply one patch in place. Consecutive text (or thinking) deltas extend the last block of that type. */
export function applyPatch(turn: Turn, patch: Patch): void {
  switch (patch.patch_type) {
    case 'add_content':
    case 'add_thinking': {
      const type = patch.patch_type === 'add_content' ? 'text' : 'thinking';
      const last = turn.blocks[turn.blocks.length - 1];
      if (last && last.type === type) last.content += patch.data.text_delta;
      else turn.blocks.push(block(type, patch.data.text_delta));
      return;
    }
    case 'add_tool_call': {
      const { question, ...d } = patch.data;
      turn.tool_calls.push({ ...d, result: null, duration_ms: 0, pending_question_ref: d.status === 'awaiting_answer' ? (question ?? d.id) : null });
      turn.blocks.push(block('tool_use', d.arguments, d));
      return;
    }
    case 'update_tool_call': {
      const call = turn.tool_calls.find((c) => c.id === patch.data.id);
      if (call) call.status = patch.data.status;
      return;
    }
    case 'tool_result': {
      const d = patch.data;
      const call = turn.tool_calls.find((c) => c.id === d.tool_call_id);
      if (!call) return;
      call.status = d.status;
      call.result = d.result;
      call.duration_ms = d.duration_ms;
      call.pending_question_ref = null;
      turn.blocks.push(block('tool_result', d.result, call));
      return;
    }
    case 'usage':
      turn.usage = { input_tokens: patch.data.input_tokens, output_tokens: patch.data.output_tokens };
      return;
  }
}

/** A call still waiting for its result (running, or a question not yet answered). */
export function isOpen(c: ToolCall): boolean {
  return c.status === 'pending' || c.status === 'awaiting_answer';
}

export function hasOpenCalls(turn: Pick<Turn, 'tool_calls'>): boolean {
  return turn.tool_calls.some(isOpen);
}

/** Plain text of a turn: the concatenation of its text blocks (docs/sessions-and-runs.md "Turn projection"). */
export function turnText(turn: Pick<Turn, 'blocks'>): string {
  return turn.blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.content)
    .join('');
}
