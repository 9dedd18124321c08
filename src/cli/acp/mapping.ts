import type { ContentBlock, PermissionOption, PlanEntry, SessionUpdate, StopReason, ToolCallContent, ToolCallStatus, ToolKind } from '@agentclientprotocol/sdk';
import type { Turn } from '../terminal/api.js';
import type { Approval } from '../terminal/approval.js';
import type { ChatEnd } from '../terminal/chat.js';
import { keyArgument } from '../terminal/format.js';
import type { Answer, Question } from '../terminal/question.js';

/**
 * The pure half of `agentsvc acp`: how agentsvc's events, turns, questions and approvals read in
 * the Agent Client Protocol, and how an ACP prompt reads as a `chat:send` message. The table of
 * what maps to what, and what ACP does not carry: docs/acp.md.
 */

/** The chat:send `message`: a string, or parts when the prompt holds an image. */
export type Message = string | ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } })[];

/**
 * An ACP prompt as a chat:send message. Text stays text; an image becomes a data URL part; a
 * resource link is written as a markdown link and an embedded text resource as a fenced block
 * named by its URI (the agent cannot open the editor's files: its tools see only the session's
 * workspace); binary resources and audio are not carried and say so in the text.
 */
export function promptMessage(prompt: ContentBlock[]): Message {
  const parts: Exclude<Message, string> = [];
  const text = (t: string) => {
    const last = parts.at(-1);
    if (last?.type === 'text') last.text += t;
    else parts.push({ type: 'text', text: t });
  };
  for (const b of prompt) {
    if (b.type === 'text') text(b.text);
    else if (b.type === 'image') parts.push({ type: 'image_url', image_url: { url: `data:${b.mimeType};base64,${b.data}` } });
    else if (b.type === 'resource_link') text(`[${b.title ?? b.name}](${b.uri})`);
    else if (b.type === 'resource') {
      const r = b.resource;
      text('text' in r ? `\n\n${r.uri}:\n\`\`\`\n${r.text}\n\`\`\`\n` : `\n\n(${r.uri}: a binary resource, not sent)\n`);
    } else text(`(${b.type} content is not supported)`);
  }
  return parts.every((p) => p.type === 'text') ? parts.map((p) => (p as { text: string }).text).join('') : parts;
}

/** The text of a message, for a new session's title. */
export function messageText(m: Message): string {
  return typeof m === 'string' ? m : m.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

const KINDS: Record<string, ToolKind> = {
  Read: 'read',
  Write: 'edit',
  Edit: 'edit',
  Glob: 'search',
  Grep: 'search',
  Bash: 'execute',
  WebFetch: 'fetch',
  WebSearch: 'fetch',
  TaskCreate: 'think',
  TaskUpdate: 'think',
  TaskList: 'think',
  Agent: 'think',
};

export function toolKind(tool: string): ToolKind {
  return KINDS[tool] ?? 'other';
}

/** "Bash: ls -la", as the terminal client shows a call on one line. */
export function toolTitle(tool: string, displayName: string, args: string): string {
  const key = keyArgument(tool, args, 80);
  return key ? `${displayName || tool}: ${key}` : displayName || tool;
}

export function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args || '{}');
  } catch {
    return args;
  }
}

/**
 * A call's status in ACP. `pending` (announced) runs at once in agentsvc, so it reads
 * `in_progress`; `awaiting_answer` (a question or an approval) is ACP's `pending`; `cancelled` has
 * no ACP status of its own and reads `failed` (its content says it was cancelled).
 */
export function callStatus(status: string): ToolCallStatus {
  switch (status) {
    case 'awaiting_answer':
      return 'pending';
    case 'done':
      return 'completed';
    case 'error':
    case 'cancelled':
      return 'failed';
    default:
      return 'in_progress';
  }
}

export const textContent = (text: string): ToolCallContent[] => (text ? [{ type: 'content', content: { type: 'text', text } }] : []);

/** The `tool_call` update that announces a call (live, or replayed from a stored turn). */
export function toolCallUpdate(call: { id: string; tool_name: string; display_name: string; arguments: string; status: string; result?: string | null }, parent: string | null): SessionUpdate {
  return {
    sessionUpdate: 'tool_call',
    toolCallId: call.id,
    title: toolTitle(call.tool_name, call.display_name, call.arguments),
    kind: toolKind(call.tool_name),
    status: callStatus(call.status),
    rawInput: parseArgs(call.arguments),
    content: textContent(call.result ?? ''),
    ...(parent ? { _meta: { agentsvc: { parent_tool_call_id: parent } } } : {}),
  };
}

/**
 * How a run's end reads as an ACP stop reason; null for a run that failed (the prompt then answers
 * a JSON-RPC error with the run's `system:error`). `tool_question` / `tool_approval` do not end a
 * prompt turn: the agent asks through `session/request_permission` and goes on.
 */
export function stopReason(end: Pick<ChatEnd, 'status' | 'finish_reason'>): StopReason | null {
  if (end.status === 'interrupted' || end.finish_reason === 'interrupted') return 'cancelled';
  if (end.status === 'failed') return null;
  switch (end.finish_reason) {
    case 'max_turns':
    case 'limit':
      return 'max_turn_requests';
    case 'budget':
      return 'max_tokens';
    case 'loop':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/** The answers of an approval (docs/socket-protocol.md, "Ordering"), by their index. */
export const APPROVAL_OPTIONS: PermissionOption[] = [
  { optionId: '0', name: 'Allow once', kind: 'allow_once' },
  { optionId: '1', name: 'Allow for this session', kind: 'allow_always' },
  { optionId: '2', name: 'Deny', kind: 'reject_once' },
];

export function approvalOptions(a: Approval): PermissionOption[] {
  return APPROVAL_OPTIONS.map((o, i) => ({ ...o, name: a.options?.[i] ?? o.name }));
}

/** What an approval says beside its options: the rule that asked. */
export function approvalNote(a: Approval): string {
  if (!a.rule) return `Allow ${a.tool_name}?`;
  return `Allow ${a.tool_name}? (rule: ${a.rule.action} ${a.rule.tool}${a.rule.pattern !== undefined ? ` ${a.rule.pattern}` : ''}${a.source ? `, ${a.source}` : ''})`;
}

/** One option per choice of an AskUserQuestion question; the option id is the choice's index. */
export function questionOptions(q: Question): PermissionOption[] {
  return q.options.map((o, i) => ({ optionId: String(i), name: o.description ? `${o.label} - ${o.description}` : o.label, kind: 'allow_once' }));
}

export function questionTitle(q: Question): string {
  return q.header ? `${q.header}: ${q.question}` : q.question;
}

/** A pending question answered by typed text (a prompt sent while it waits): every question gets the text. */
export function typedAnswer(toolCallId: string, questions: Question[], text: string): Answer {
  const custom: Record<string, string> = {};
  (questions.length ? questions : [null]).forEach((_, i) => (custom[String(i)] = text));
  return { tool_call_id: toolCallId, selections: {}, custom };
}

/** A session's task list (TaskCreate / TaskUpdate) as an ACP plan: the whole list each time. */
export function planEntries(tasks: { subject: string; status: string }[]): PlanEntry[] {
  return tasks.map((t) => ({ content: t.subject, priority: 'medium', status: t.status === 'in_progress' || t.status === 'completed' ? t.status : 'pending' }));
}

/**
 * A stored conversation as the updates `session/load` replays: user text as user message chunks,
 * reasoning as thought chunks, answers as agent message chunks, and each tool call with its final
 * status and result, in the order of the turn's blocks. Sub-agents' turns are left out (their work
 * shows as the `Agent` call's result), as are compaction summaries.
 */
export function historyUpdates(turns: Turn[]): SessionUpdate[] {
  const out: SessionUpdate[] = [];
  for (const t of turns) {
    if (t.parent_fork_tool_call_id || t.deprecated || (t.role !== 'user' && t.role !== 'assistant')) continue;
    const calls = new Map(t.tool_calls.map((c) => [c.id, c]));
    for (const b of t.blocks) {
      if (b.type === 'text' && b.content) out.push({ sessionUpdate: t.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk', content: { type: 'text', text: b.content } });
      else if (b.type === 'thinking' && b.content) out.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: b.content } });
      else if (b.type === 'tool_use' && b.tool_call_id && calls.has(b.tool_call_id)) {
        out.push(toolCallUpdate(calls.get(b.tool_call_id)!, null));
        calls.delete(b.tool_call_id);
      }
    }
    for (const c of calls.values()) out.push(toolCallUpdate(c, null));
  }
  return out;
}
