import type { Turn } from './api.js';
import type { Answer } from './question.js';
import { clean, type Style } from './style.js';

/**
 * A policy approval (docs/policy.md) in the terminal: the tool, its arguments, the rule that asked,
 * and the three answers as a numbered menu, like AskUserQuestion's.
 */

export interface Approval {
  type: 'approval';
  tool_call_id: string;
  tool_name: string;
  arguments: unknown;
  rule?: { tool: string; pattern?: string; action: string };
  source?: string;
  options?: string[];
}

const OPTIONS = ['Allow once', 'Allow for this session', 'Deny'];
/** Arguments longer than this are cut in the menu (the full call is in the conversation). */
const MAX_ARGS = 600;

export function asApproval(ref: unknown): Approval | null {
  return ref && typeof ref === 'object' && (ref as { type?: unknown }).type === 'approval' ? (ref as Approval) : null;
}

/** What a stored conversation waits on: its first approval (they are answered in order), else a question. */
export function firstPending(turns: Turn[]): { toolCallId: string; arguments: string; approval?: Approval } | null {
  let question: { toolCallId: string; arguments: string } | null = null;
  for (const t of turns) {
    for (const c of t.tool_calls ?? []) {
      if (c.status !== 'awaiting_answer') continue;
      const approval = asApproval((c as { pending_question_ref?: unknown }).pending_question_ref);
      if (approval) return { toolCallId: c.id, arguments: c.arguments, approval };
      question = { toolCallId: c.id, arguments: c.arguments };
    }
  }
  return question;
}

/** The menu of an approval, as lines. */
export function approvalMenu(a: Approval, s: Style): string[] {
  const args = typeof a.arguments === 'string' ? a.arguments : JSON.stringify(a.arguments ?? {});
  const shown = clean(args.length > MAX_ARGS ? `${args.slice(0, MAX_ARGS)}…` : args);
  const rule = a.rule ? `${a.rule.action} ${a.rule.tool}${a.rule.pattern !== undefined ? ` ${a.rule.pattern}` : ''}${a.source ? ` (${a.source})` : ''}` : '(no rule)';
  const lines = [`${s.yellow('?')} ${s.bold(`Allow ${clean(a.tool_name)}?`)}`, `  ${s.gray('arguments:')} ${shown}`, `  ${s.gray('rule:')} ${clean(rule)}`];
  (a.options?.length === 3 ? a.options : OPTIONS).forEach((o, i) => lines.push(`  ${s.cyan(`${i + 1}.`)} ${clean(o)}`));
  lines.push(s.gray('  choose 1-3 (3 may be followed by a reason: "3 not on main")'));
  return lines;
}

/** One reply: the option (0-based) and, for Deny, the reason typed after it. */
export function parseApprovalReply(reply: string): { choice: number; reason: string } | { error: string } {
  const m = /^\s*([123])(?:[\s:,-]+(.*))?$/s.exec(reply);
  if (!m) return { error: 'choose 1, 2 or 3' };
  const choice = Number(m[1]) - 1;
  const reason = (m[2] ?? '').trim();
  if (reason && choice !== 2) return { error: 'only Deny (3) takes a reason' };
  return { choice, reason };
}

/** Ask one approval through `ask`; resolves with the chat:send askuser_answer, or null when the input ended. */
export async function askApproval(toolCallId: string, a: Approval, io: { ask(prompt: string, choices?: string[]): Promise<string | null>; print(line: string): void }, s: Style): Promise<Answer | null> {
  for (const l of approvalMenu(a, s)) io.print(l);
  for (;;) {
    const reply = await io.ask(`${s.cyan('›')} `, a.options?.length === 3 ? a.options : OPTIONS);
    if (reply === null) return null;
    const r = parseApprovalReply(reply);
    if ('error' in r) {
      io.print(s.red(`  ${r.error}`));
      continue;
    }
    return { tool_call_id: toolCallId, selections: { 0: [r.choice] }, custom: r.reason ? { 0: r.reason } : {} };
  }
}
