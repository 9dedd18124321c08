import type { Question } from '../../core/agent-tools/question.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { Turn } from '../../core/conversation/turns.js';
import type { RunOutcome, Runs } from '../../core/engine/runs.js';
import type { Hooks } from '../../core/engine/hooks.js';
import type { CreateSessionInput } from '../../core/sessions/schemas.js';
import type { ScheduledTaskStore } from './store.js';

export interface LauncherDeps {
  store: ScheduledTaskStore;
  sessions: { create(userId: string, input: CreateSessionInput): Promise<string>; status(id: string): Promise<string | undefined> };
  runs: Pick<Runs, 'start' | 'onEnded'>;
  hooks: Pick<Hooks, 'on'>;
  conversation: { turns(sessionId: string): Promise<Turn[]> };
  logger: Logger;
}

/**
 * Runs an occurrence of a scheduled task as a chat like any other: a new session of the task's
 * owner (intent = title) whose user message is the prompt. The run record follows the run through
 * the runs API: the end of every `scheduled` run, on the node that ran it or on the node that
 * recovered it after its own died, settles the record of its session. `skip_confirmations` answers
 * each question with its first option(s) instead of pausing (approvals are never answered so:
 * unattended runs do not pause for them, docs/policy.md).
 */
export class ScheduledTaskLauncher {
  private offs: (() => void)[] = [];

  constructor(private readonly deps: LauncherDeps) {}

  /** Listen for run ends; settle what was left open while no node listened (a crash mid-start). */
  start() {
    this.offs.push(this.deps.runs.onEnded('scheduled', (o) => this.ended(o)));
    // A session deleted while its run waits for an answer leaves the record without a session.
    this.offs.push(this.deps.hooks.on('session.deleted', () => this.sweep()));
    void this.sweep();
  }

  /** One occurrence: runs once in the whole install (the run row's unique key), never throws. */
  async fire(taskId: string, at: Date): Promise<void> {
    const { store, logger } = this.deps;
    const task = await store.byId(taskId);
    if (!task?.enabled) return;
    if (task.expires_at && new Date(task.expires_at).getTime() <= Date.now()) return;
    const runId = await store.claimRun(taskId, at);
    if (!runId) return;
    try {
      const sessionId = await this.deps.sessions.create(task.user_id, { intent: task.title, model: task.model, is_persistent: false });
      await store.setRunSession(runId, sessionId);
      await this.deps.runs.start(task.user_id, { session_id: sessionId, message: task.prompt }, 'scheduled');
      logger.info({ task_id: taskId, session_id: sessionId, scheduled_for: at.toISOString() }, 'scheduled task started');
    } catch (e) {
      logger.warn({ ...errField(e), task_id: taskId }, 'scheduled task could not start');
      await store.finishRun(runId, 'failed', `could not start: ${(e as Error).message}`).catch(() => {});
    }
  }

  private async ended(o: RunOutcome) {
    try {
      const rec = await this.deps.store.runOfSession(o.sessionId);
      if (!rec) return;
      if (o.finish_reason === 'tool_question') {
        // Paused on a question: answered here when the task says so, else it waits for its user.
        if (rec.skip_confirmations) await this.answerFirst(o.userId, o.sessionId);
        return;
      }
      const ok = o.status === 'completed';
      await this.deps.store.finishRun(rec.id, ok ? 'completed' : 'failed', ok ? null : (o.error?.message ?? `the run ended ${o.status} (${o.finish_reason})`));
    } catch (e) {
      this.deps.logger.error({ ...errField(e), session_id: o.sessionId }, 'could not record a scheduled run');
    }
  }

  /** Answer the session's pending question with the first option of each of its questions. */
  private async answerFirst(userId: string, sessionId: string): Promise<void> {
    try {
      const turns = await this.deps.conversation.turns(sessionId);
      const call = turns.flatMap((t) => t.tool_calls).find((c) => c.status === 'awaiting_answer' && typeof c.pending_question_ref === 'string');
      if (!call) return;
      const questions = (JSON.parse(call.arguments) as { questions: Question[] }).questions;
      const selections = Object.fromEntries(questions.map((_, i) => [String(i), [0]]));
      await this.deps.runs.start(userId, { session_id: sessionId, message: '', askuser_answer: { tool_call_id: call.id, selections, custom: {} } }, 'scheduled');
    } catch (e) {
      // Another node answered first, or the session went away.
      this.deps.logger.info({ ...errField(e), session_id: sessionId }, 'scheduled task: could not answer a question');
    }
  }

  /**
   * At start and when a session is deleted: records left open by a node that died between
   * claiming an occurrence and starting its run, or whose session was deleted while it waited.
   * Runs that did start are settled by their end, or by lease recovery's. Never throws.
   */
  async sweep(): Promise<void> {
    try {
      for (const r of await this.deps.store.openRuns(60)) {
        const status = r.session_id ? await this.deps.sessions.status(r.session_id) : undefined;
        if (!r.session_id) await this.deps.store.finishRun(r.id, 'failed', 'the session was deleted, or the run never started');
        else if (status === 'created') await this.deps.store.finishRun(r.id, 'failed', 'the run never started');
        else if (status === 'completed') await this.deps.store.finishRun(r.id, 'completed', null);
        else if (status === 'failed' || status === 'interrupted') await this.deps.store.finishRun(r.id, 'failed', `the run ended ${status}`);
      }
    } catch (e) {
      this.deps.logger.error(errField(e), 'scheduled runs check failed');
    }
  }

  close() {
    for (const off of this.offs.splice(0)) off();
  }
}
