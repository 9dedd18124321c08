import type { Question } from '../agents/question.js';
import type { EventBus, SessionEvent } from '../infra/event-bus.js';
import { errField, type Logger } from '../lib/logger.js';
import type { Turn } from '../chat/turns.js';
import type { CreateSessionInput } from '../sessions/schemas.js';
import type { TaskStore } from './store.js';

export interface LauncherDeps {
  store: TaskStore;
  sessions: { create(userId: string, input: CreateSessionInput): Promise<string> };
  chat: { send(userId: string, raw: unknown, origin?: 'scheduled' | 'task' | 'replay'): Promise<unknown> };
  conversation: { turns(sessionId: string): Promise<Turn[]> };
  bus: EventBus;
  logger: Logger;
  /** How often open runs are reconciled with their sessions (ms). */
  sweepMs?: number;
}

interface Tracked {
  runId: string;
  userId: string;
  skip: boolean;
  error?: string;
}

/**
 * Runs an occurrence of a scheduled task as a chat like any other: a new session of the task's
 * owner (intent = title) whose user message is the prompt. The run record follows the run: this
 * node watches the chat:end of the sessions it started; a sweep settles runs whose node died or
 * restarted, from their session's status. `skip_confirmations` answers each question with its first
 * option(s) instead of pausing.
 */
export class TaskLauncher {
  private mine = new Map<string, Tracked>();
  private off: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: LauncherDeps) {}

  start() {
    this.off = this.deps.bus.subscribe((ev) => this.onEvent(ev));
    this.timer = setInterval(() => void this.sweep(), this.deps.sweepMs ?? 15_000);
    this.timer.unref();
  }

  /** One occurrence: runs once in the whole install (the run row's unique key), never throws. */
  async fire(taskId: string, at: Date): Promise<void> {
    const { store, logger } = this.deps;
    const task = await store.byId(taskId);
    if (!task?.enabled) return;
    if (task.expires_at && new Date(task.expires_at).getTime() <= Date.now()) return;
    const runId = await store.claimRun(taskId, at);
    if (!runId) return;
    let sessionId: string | null = null;
    try {
      sessionId = await this.deps.sessions.create(task.user_id, { intent: task.title, model: task.model, is_persistent: false });
      await store.setRunSession(runId, sessionId);
      this.mine.set(sessionId, { runId, userId: task.user_id, skip: task.skip_confirmations });
      await this.deps.chat.send(task.user_id, { session_id: sessionId, message: task.prompt }, 'scheduled');
      logger.info({ task_id: taskId, session_id: sessionId, scheduled_for: at.toISOString() }, 'scheduled task started');
    } catch (e) {
      if (sessionId) this.mine.delete(sessionId);
      logger.warn({ ...errField(e), task_id: taskId }, 'scheduled task could not start');
      await store.finishRun(runId, 'failed', `could not start: ${(e as Error).message}`).catch(() => {});
    }
  }

  private onEvent(ev: SessionEvent) {
    const sid = ev.payload.session_id;
    const t = this.mine.get(sid);
    if (!t) return;
    if (ev.name === 'system:error') t.error = String(ev.payload.message ?? ev.payload.code ?? 'error');
    if (ev.name !== 'chat:end') return;
    const { status, finish_reason } = ev.payload as { status?: string; finish_reason?: string };
    if (finish_reason === 'tool_question') {
      // Paused on a question: answered here when the task says so, else it waits for its user.
      if (t.skip) void this.answerFirst(t.userId, sid);
      return;
    }
    this.mine.delete(sid);
    const ok = status === 'completed';
    void this.deps.store
      .finishRun(t.runId, ok ? 'completed' : 'failed', ok ? null : (t.error ?? `the run ended ${status} (${finish_reason})`))
      .catch((e) => this.deps.logger.error({ ...errField(e), session_id: sid }, 'could not record a scheduled run'));
  }

  /** Answer the session's pending question with the first option of each of its questions. */
  private async answerFirst(userId: string, sessionId: string): Promise<void> {
    try {
      const turns = await this.deps.conversation.turns(sessionId);
      const call = turns.flatMap((t) => t.tool_calls).find((c) => c.status === 'awaiting_answer');
      if (!call) return;
      const questions = (JSON.parse(call.arguments) as { questions: Question[] }).questions;
      const selections = Object.fromEntries(questions.map((_, i) => [String(i), [0]]));
      await this.deps.chat.send(userId, { session_id: sessionId, message: '', askuser_answer: { tool_call_id: call.id, selections, custom: {} } }, 'scheduled');
    } catch (e) {
      // Another node answered first, or the session went away: the sweep looks again.
      this.deps.logger.info({ ...errField(e), session_id: sessionId }, 'scheduled task: could not answer a question');
    }
  }

  /** Settle open runs from their sessions (their node died, or this one restarted). Never throws. */
  async sweep(): Promise<void> {
    try {
      for (const r of await this.deps.store.openRuns(20)) {
        if (!r.session_id) {
          await this.deps.store.finishRun(r.id, 'failed', 'the session was deleted, or the run never started');
        } else if (r.session_status === 'completed') {
          this.mine.delete(r.session_id);
          await this.deps.store.finishRun(r.id, 'completed', null);
        } else if (r.session_status === 'failed' || r.session_status === 'interrupted') {
          this.mine.delete(r.session_id);
          await this.deps.store.finishRun(r.id, 'failed', `the run ended ${r.session_status}`);
        } else if (r.session_status === 'waiting_for_input' && r.skip_confirmations) {
          await this.answerFirst(r.user_id, r.session_id);
        }
      }
    } catch (e) {
      this.deps.logger.error(errField(e), 'scheduled runs sweep failed');
    }
  }

  close() {
    this.off?.();
    if (this.timer) clearInterval(this.timer);
  }
}
