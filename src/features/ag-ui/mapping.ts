import { type BaseEvent, EventType, type Interrupt, type RunFinishedOutcome, type TokenUsage } from '@ag-ui/core';
import type { SessionEvent } from '../../platform/infra/event-bus.js';
import type { Turn } from '../../core/conversation/turns.js';
import { type Pending, pendingOf } from '../doors/pending.js';

/** What an interrupt's resume `payload` must be: the session's answer to a question or an approval. */
export const ANSWER_SCHEMA = {
  type: 'object',
  properties: {
    selections: { type: 'object', additionalProperties: { type: 'array', items: { type: 'integer', minimum: 0 } } },
    custom: { type: 'object', additionalProperties: { type: 'string' } },
  },
  required: ['selections'],
};

/**
 * One run's session events as AG-UI events (docs/protocol-doors.md has the table). Text of the
 * root loop's assistant turns becomes text messages (one per stretch of text between tool calls;
 * the first keeps the turn's id as its message id), their tool calls become TOOL_CALL_START, ARGS,
 * END and, once run, RESULT. Sub-agent turns are not carried (their answer is the Agent call's
 * result); reasoning and usage patches are not either. chat:end closes the run: RUN_FINISHED
 * (success, interrupt for a question or an approval, cancelled for a stopped run) or RUN_ERROR.
 */
export class AgUiRun {
  /** Root assistant turns of the run, and sub-agents' turns (left out). */
  private readonly root = new Set<string>();
  private readonly sub = new Set<string>();
  /** The open text message of each turn, and how many the turn had. */
  private readonly open = new Map<string, string>();
  private readonly parts = new Map<string, number>();
  private readonly toolNames = new Map<string, string>();
  private pending: Pending[] = [];
  private error: { code: string; message: string } | null = null;

  constructor(
    private readonly threadId: string,
    private readonly runId: string,
  ) {}

  started(): BaseEvent[] {
    return [this.ev(EventType.RUN_STARTED, { threadId: this.threadId, runId: this.runId })];
  }

  /** The AG-UI events of one session event (none for those not carried). */
  map(ev: SessionEvent): BaseEvent[] {
    const p = ev.payload as Record<string, unknown>;
    switch (ev.name) {
      case 'turn:start':
        if (p.parent_fork_tool_call_id !== null) this.sub.add(String(p.turn_id));
        else if (p.role === 'assistant') this.root.add(String(p.turn_id));
        return [];
      case 'turn:patch': {
        const turnId = String(p.turn_id);
        // An answer's run patches the paused turn, started by the run before: its tool result is carried.
        const carried = this.root.has(turnId) || (p.patch_type === 'tool_result' && !this.sub.has(turnId));
        return carried ? this.patch(turnId, String(p.patch_type), p.data as Record<string, unknown>) : [];
      }
      case 'turn:end': {
        const turnId = String(p.turn_id);
        if (!this.root.has(turnId)) return [];
        this.pending = pendingOf(p.turn as Turn);
        return this.closeText(turnId);
      }
      case 'system:error':
        this.error = { code: String(p.code), message: String(p.message) };
        return [];
      case 'system:notice':
        return [this.ev(EventType.CUSTOM, { name: 'agentsvc.notice', value: p })];
      case 'chat:end':
        return this.end(p);
      default:
        return [];
    }
  }

  private patch(turnId: string, type: string, d: Record<string, unknown>): BaseEvent[] {
    if (type === 'add_content') {
      const delta = String(d.text_delta ?? '');
      if (!delta) return [];
      const out: BaseEvent[] = [];
      let id = this.open.get(turnId);
      if (!id) {
        const n = this.parts.get(turnId) ?? 0;
        this.parts.set(turnId, n + 1);
        id = n === 0 ? turnId : `${turnId}.${n}`;
        this.open.set(turnId, id);
        out.push(this.ev(EventType.TEXT_MESSAGE_START, { messageId: id, role: 'assistant' }));
      }
      out.push(this.ev(EventType.TEXT_MESSAGE_CONTENT, { messageId: id, delta }));
      return out;
    }
    if (type === 'add_tool_call') {
      const id = String(d.id);
      this.toolNames.set(id, String(d.tool_name));
      const out = this.closeText(turnId);
      out.push(this.ev(EventType.TOOL_CALL_START, { toolCallId: id, toolCallName: String(d.tool_name), parentMessageId: turnId }));
      if (d.arguments) out.push(this.ev(EventType.TOOL_CALL_ARGS, { toolCallId: id, delta: String(d.arguments) }));
      out.push(this.ev(EventType.TOOL_CALL_END, { toolCallId: id }));
      return out;
    }
    if (type === 'tool_result') {
      const id = String(d.tool_call_id);
      // A result of a call this stream did not announce (a paused call answered by this run) is
      // still its result: the client announced it in the run that paused.
      return [this.ev(EventType.TOOL_CALL_RESULT, { messageId: `${id}.result`, toolCallId: id, content: String(d.result ?? ''), role: 'tool' })];
    }
    return [];
  }

  private closeText(turnId: string): BaseEvent[] {
    const id = this.open.get(turnId);
    if (!id) return [];
    this.open.delete(turnId);
    return [this.ev(EventType.TEXT_MESSAGE_END, { messageId: id })];
  }

  private end(p: Record<string, unknown>): BaseEvent[] {
    const out = [...this.open.keys()].flatMap((t) => this.closeText(t));
    const reason = String(p.finish_reason);
    const u = p.usage as { input_tokens: number; output_tokens: number } | undefined;
    const usage: TokenUsage[] | undefined = u ? [{ inputTokens: u.input_tokens, outputTokens: u.output_tokens, totalTokens: u.input_tokens + u.output_tokens }] : undefined;
    const result = { status: p.status, finish_reason: reason, usage: p.usage ?? null };
    if (p.status === 'failed') {
      const e = this.error ?? { code: 'RUN_FAILED', message: `the run failed (${reason})` };
      out.push(this.ev(EventType.RUN_ERROR, { message: e.message, code: e.code, ...(usage ? { usage } : {}) }));
      return out;
    }
    let outcome: RunFinishedOutcome = { type: 'success' };
    if (p.status === 'interrupted') outcome = { type: 'cancelled' };
    else if ((reason === 'tool_question' || reason === 'tool_approval') && this.pending.length) {
      // Approvals are answered in the order they were asked: the first is the one to answer now.
      outcome = { type: 'interrupt', interrupts: [interrupt(this.pending[0])] };
    }
    out.push(this.ev(EventType.RUN_FINISHED, { threadId: this.threadId, runId: this.runId, result, outcome, ...(usage ? { usage } : {}) }));
    return out;
  }

  private ev(type: EventType, fields: Record<string, unknown>): BaseEvent {
    return { type, timestamp: Date.now(), ...fields } as BaseEvent;
  }
}

/** A pending question or approval as an AG-UI interrupt, resumed with `{selections, custom?}`. */
export function interrupt(p: Pending): Interrupt {
  const message =
    p.type === 'approval'
      ? `Allow ${p.tool_name} ${JSON.stringify(p.arguments)}? selections {"0": [i]}: ${p.options.map((o, i) => `${i} ${o}`).join(', ')}`
      : `Answer: ${(p.questions as { question?: string }[]).map((q) => q.question).join(' / ')}`;
  return {
    id: p.tool_call_id,
    toolCallId: p.tool_call_id,
    reason: p.type === 'approval' ? 'agentsvc.approval' : 'agentsvc.question',
    message,
    responseSchema: ANSWER_SCHEMA,
    metadata: { agentsvc: p },
  };
}
