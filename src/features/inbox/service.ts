import type { Database } from '../../platform/db/index.js';
import type { Conversation } from '../../core/conversation/conversation.js';
import type { ToolCall } from '../../core/conversation/turns.js';
import { firstApproval, isApproval } from '../../core/engine/approval.js';
import type { Runs } from '../../core/engine/runs.js';
import type { DelayedJobs } from '../../platform/infra/delayed.js';
import { AppError } from '../../platform/server/errors.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { AskedApproval, PolicyService } from '../policy/service.js';
import type { AuditStore } from '../policy/audit-store.js';
import type { SessionService } from '../../core/sessions/service.js';
import { DeadlineStore } from './store.js';
import type { InboxEntry } from './schemas.js';

/** The delayed-job topic of approval timeouts. */
export const TIMEOUT_TOPIC = 'approval-timeout';
/** How soon a timeout that cannot be decided yet (its run still going, an earlier approval first) looks again. */
const RETRY_MS = 2000;

export type InboxItem = InboxEntry;

export interface InboxDeps {
  db: Database;
  sessions: Pick<SessionService, 'waiting'>;
  audit: Pick<AuditStore, 'askedAt'>;
  conversation: Pick<Conversation, 'turns'>;
  runs: Pick<Runs, 'start'>;
  policy: Pick<PolicyService, 'onAsked' | 'decideAs'>;
  delayed: DelayedJobs;
  logger: Logger;
}

/**
 * Everything waiting on a person (docs/inbox.md): the pending questions and approvals of their
 * sessions, oldest first, and the approval timeouts, decided by a durable delayed job so that
 * they hold across restarts and nodes.
 */
export class Inbox {
  private readonly deadlines: DeadlineStore;

  constructor(private readonly d: InboxDeps) {
    this.deadlines = new DeadlineStore(d.db);
    d.policy.onAsked((a) => this.asked(a));
    d.delayed.handle(TIMEOUT_TOPIC, (callId) => this.timeout(callId));
  }

  /** The caller's waiting questions and approvals, oldest first; `total` counts them all. */
  async list(userId: string, limit: number, offset: number): Promise<{ items: InboxItem[]; total: number }> {
    const sessions = await this.d.sessions.waiting(userId);
    if (!sessions.length) return { items: [], total: 0 };
    const ids = sessions.map((s) => s.id);
    const [askedAt, deadline] = await Promise.all([this.d.audit.askedAt(ids), this.deadlines.forSessions(ids)]);
    const items: InboxItem[] = [];
    for (const s of sessions) {
      for (const turn of await this.d.conversation.turns(s.id)) {
        for (const call of turn.tool_calls) {
          if (call.status !== 'awaiting_answer') continue;
          const at = askedAt.get(call.id) ?? new Date(turn.started_at);
          const dl = deadline.get(call.id);
          items.push({
            session_id: s.id,
            session_intent: s.intent,
            tool_call_id: call.id,
            kind: isApproval(call.pending_question_ref) ? 'approval' : 'question',
            asked_at: at.toISOString(),
            timeout_at: dl ? dl.deadline.toISOString() : null,
            on_timeout: dl?.on_timeout ?? null,
            tool_name: call.tool_name,
            ...refFields(call),
          });
        }
      }
    }
    items.sort((a, b) => a.asked_at.localeCompare(b.asked_at) || a.tool_call_id.localeCompare(b.tool_call_id));
    return { items: items.slice(offset, offset + limit), total: items.length };
  }

  /** Answer one item as the console and `agentsvc inbox` do: the chat:send with askuser_answer, over REST. */
  async answer(userId: string, sessionId: string, answer: { tool_call_id: string; selections: Record<string, number[]>; custom?: Record<string, string> }) {
    const h = await this.d.runs.start(userId, { session_id: sessionId, message: '', askuser_answer: { custom: {}, ...answer } }, 'chat');
    return { session_id: sessionId, run_id: h.runId };
  }

  /** An approval was asked: with a timeout on its rule, its deadline is stored and its job scheduled. */
  private async asked(a: AskedApproval): Promise<void> {
    if (a.rule.timeout_seconds === undefined) return;
    const deadline = new Date(Date.now() + a.rule.timeout_seconds * 1000);
    await this.deadlines.set(a.callId, a.sessionId, a.userId, deadline, a.rule.on_timeout ?? 'deny');
    await this.d.delayed.at(TIMEOUT_TOPIC, a.callId, deadline);
  }

  /**
   * A deadline passed: decide the approval by its `on_timeout` unless it was answered meanwhile.
   * Runs on whichever node takes the job, possibly more than once: it looks at the stored call each
   * time, and the answer's claim (waiting_for_input -> running) lets one decision through.
   */
  async timeout(callId: string): Promise<void> {
    const row = await this.deadlines.get(callId);
    if (!row) return;
    const done = () => this.deadlines.remove(callId);
    const later = () => this.d.delayed.at(TIMEOUT_TOPIC, callId, new Date(Date.now() + RETRY_MS));
    const turns = await this.d.conversation.turns(row.session_id);
    const turn = turns.find((t) => t.tool_calls.some((c) => c.id === callId));
    const call = turn?.tool_calls.find((c) => c.id === callId);
    if (!turn || !call || call.status !== 'awaiting_answer') return void (await done());
    // Asked one after another: this one's turn comes once the approvals before it are decided.
    if (firstApproval(turn)?.id !== callId) return void (await later());
    const allow = row.on_timeout === 'allow';
    this.d.policy.decideAs(callId, 'timeout');
    try {
      await this.d.runs.start(
        row.user_id,
        {
          session_id: row.session_id,
          message: '',
          askuser_answer: { tool_call_id: callId, selections: { '0': [allow ? 0 : 2] }, custom: allow ? {} : { '0': `no answer within ${row.seconds} s (on_timeout: deny)` } },
        },
        'chat',
      );
      await done();
      this.d.logger.info({ session_id: row.session_id, tool_call_id: callId, on_timeout: row.on_timeout }, 'an approval timed out and was decided');
    } catch (e) {
      this.d.policy.decideAs(callId, null);
      const code = e instanceof AppError ? e.code : '';
      if (code === 'SESSION_BUSY') return void (await later());
      if (code === 'NO_PENDING_QUESTION' || code === 'NOT_FOUND') return void (await done());
      this.d.logger.error({ ...errField(e), tool_call_id: callId }, 'an approval timeout could not be decided');
      throw e;
    }
  }
}

/** What the item carries of the call: the approval's ref, or the question's questions. */
function refFields(call: ToolCall): Record<string, unknown> {
  const ref = call.pending_question_ref;
  if (isApproval(ref)) {
    const { type: _t, tool_call_id: _c, session_rules: _r, ...rest } = ref;
    return rest;
  }
  let questions: unknown = [];
  try {
    questions = (JSON.parse(call.arguments) as { questions?: unknown }).questions ?? [];
  } catch {
    // A stored call's arguments were checked before it paused; unreadable ones show no questions.
  }
  return { tool_name: call.tool_name, questions };
}
