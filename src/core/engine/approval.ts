import { AppError } from '../../platform/server/errors.js';
import type { PendingApproval, ToolCall, Turn } from '../conversation/turns.js';

/**
 * The answer to a policy approval (docs/policy.md), beside the answer to a question: the same
 * `askuser_answer {tool_call_id, selections: {"0": [i]}, custom: {"0": reason}?}`, where `i` is
 * 0 Allow once, 1 Allow for this session, 2 Deny.
 */

export type ApprovalChoice = 'once' | 'session' | 'deny';

/** Records the person's answer (audit, session rules); the policy module implements it. */
export interface ApprovalPort {
  answered(userId: string, sessionId: string, call: ToolCall, ref: PendingApproval, choice: ApprovalChoice): Promise<void>;
}

const CHOICES: ApprovalChoice[] = ['once', 'session', 'deny'];

export function isApproval(ref: ToolCall['pending_question_ref']): ref is PendingApproval {
  return !!ref && typeof ref === 'object' && ref.type === 'approval';
}

/** The approval that must be answered first: approvals of one turn are asked in the order announced. */
export function firstApproval(turn: Turn): ToolCall | undefined {
  return turn.tool_calls.find((c) => c.status === 'awaiting_answer' && isApproval(c.pending_question_ref));
}

/** Check an answer to an approval; nothing changes when it is wrong (422). */
export function approvalChoice(a: { selections: Record<string, number[]>; custom: Record<string, string> }): { choice: ApprovalChoice; reason: string } {
  const invalid = (msg: string) => new AppError(422, 'VALIDATION_ERROR', `askuser_answer: ${msg}`);
  for (const k of [...Object.keys(a.selections), ...Object.keys(a.custom)]) if (k !== '0') throw invalid(`an approval has one question, "0" (got ${k})`);
  const sel = a.selections['0'] ?? [];
  if (sel.length !== 1 || !Number.isInteger(sel[0]) || sel[0] < 0 || sel[0] > 2) throw invalid('an approval takes selections {"0": [i]} with i 0 (Allow once), 1 (Allow for this session) or 2 (Deny)');
  return { choice: CHOICES[sel[0]], reason: a.custom['0']?.trim() ?? '' };
}

/** The result a denied call gets: the policy's words, and the person's reason when they gave one. */
export function rejectionText(ref: PendingApproval, reason: string): string {
  const rule = (ref.rule ?? {}) as { tool?: string; pattern?: string };
  const named = `${rule.tool ?? ref.tool_name}${rule.pattern !== undefined ? ` ${rule.pattern}` : ''} (${String(ref.source ?? 'install')})`;
  return `denied by policy: ${named}; the user denied this call${reason ? `: ${reason}` : ''}`;
}
