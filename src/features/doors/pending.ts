import type { Turn } from '../../core/conversation/turns.js';

/**
 * What a paused run waits for, as a door shows it to its client: an AskUserQuestion (its
 * questions) or a policy approval (the tool, its arguments, the rule and the options). Answered
 * with the session's `askuser_answer {tool_call_id, selections, custom?}` (docs/protocol-doors.md).
 */
export type Pending =
  | { type: 'question'; tool_call_id: string; tool_name: string; questions: unknown[] }
  | ({ type: 'approval'; tool_call_id: string; tool_name: string; arguments: unknown; options: string[] } & Record<string, unknown>);

/** The calls of a turn that wait for a person, in the order they were announced. */
export function pendingOf(turn: Pick<Turn, 'tool_calls'>): Pending[] {
  const out: Pending[] = [];
  for (const c of turn.tool_calls) {
    if (c.status !== 'awaiting_answer') continue;
    const ref = c.pending_question_ref;
    if (ref && typeof ref === 'object' && ref.type === 'approval') {
      out.push({ ...ref, type: 'approval', tool_call_id: c.id, tool_name: c.tool_name, arguments: ref.arguments ?? parse(c.arguments), options: (ref.options as string[]) ?? [] });
    } else {
      const args = parse(c.arguments) as { questions?: unknown[] } | null;
      out.push({ type: 'question', tool_call_id: c.id, tool_name: c.tool_name, questions: Array.isArray(args?.questions) ? args.questions : [] });
    }
  }
  return out;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
