import { Ajv } from 'ajv';
import { AppError, Errors } from '../../platform/server/errors.js';
import { newTurn, type RunOpening, type RunState } from './run-state.js';
import type { PromptContext } from './system-prompt.js';
import type { Claimed } from './run-store.js';
import type { RunEnd, RunStart } from './run-executor.js';
import { isUnattended, type RunOrigin } from './run-info.js';
import { ChatSend, issues } from '../conversation/send-schema.js';
import { hasOpenCalls, type Turn } from '../conversation/turns.js';
import { approvalChoice, firstApproval, isApproval, rejectionText } from './approval.js';
import { answerText, type Question } from '../agent-tools/question.js';
import { Gate } from '../../platform/lib/gate.js';
import { IoFirstQueue } from '../../platform/lib/io-first.js';
import { RunBody, type RunOptions } from './run-body.js';

const runStart = (origin: RunOrigin): RunStart => ({ origin, unattended: isUnattended(origin) });

import type { ChatDeps, WhatIf } from './chat-deps.js';

export type { ChatDeps, WhatIf };


/** Quotes as quoted context before the message. */
function withQuotes(message: string, quotes: string[]): string {
  if (!quotes.length) return message;
  const quoted = quotes.map((q) => q.split('\n').map((l) => `> ${l}`).join('\n')).join('\n\n');
  return message ? `${quoted}\n\n${message}` : quoted;
}

/**
 * A start that has not reached its model call after this long (an MCP server starting for the
 * user's first run, a slow database) gives its slot up and goes on outside the gate: it never
 * holds up the starts behind it for longer.
 */
const START_SLOT_MS = 250;

/**
 * Of each iteration of the event loop, the time run starts may spend on opening their model calls
 * (the SDK's request, the first turn sent) before the I/O that waits (the deltas of the runs
 * already streaming) is handled (src/platform/lib/io-first.ts). bench/streaming.ts paced=200,
 * medians of 9, twice, against the same commit without it: delta p99 1.02x and 1.33x the relay's
 * against 1.31x and 1.56x; deltas/s 0.83x and 0.81x against 0.81x and 0.80x.
 */
const MODEL_CALL_SHARE_MS = 3;

type Answer = { tool_call_id: string; selections: Record<string, number[]>; custom: Record<string, string> };

/** What a chat:send means: a new user message, or the answer to a pending question. */
export class ChatService {
  /**
   * Run starts (claim, user turn, memory recall, prompt, history, tools) that go on at once:
   * AGENTSVC_RUN_STARTS_AT_ONCE; the others wait their turn, first come first served. What it
   * trades when 200 chat:send arrive together (bench/streaming.ts paced=200 warmup=2, this 2-core
   * machine, medians of 5 or 9 beside the relay in the same run, ranges over runs): more at once
   * keeps the event loop busy, so the last run starts sooner, but the runs already streaming wait
   * behind bigger bursts of start work. A start's claim and its reads wait on the database and
   * the model, not on this process: below 200 the waits add up and the burst's last run starts
   * last. Measured and dropped: letting every step of a start (after its claim too) through in
   * 5 ms shares of each iteration made the burst 0.06x slower for no better p99; only the model
   * call waits for a share (MODEL_CALL_SHARE_MS).
   *
   * | at once | deltas/s | ttfd p50 | delta p99 |
   * |---|---|---|---|
   * | 8 (the former default) | 0.69-0.71x | 2.15-2.3x | 1.0-1.25x |
   * | 64 | 0.74-0.81x | 1.9-2.2x | 1.5-2.0x |
   * | 200 (default) | 0.81-0.86x | 2.05-2.5x | 1.15-1.75x |
   */
  private readonly starts: Gate;
  /** The run starts' share of each iteration of the event loop for opening their model calls. */
  private readonly modelCalls = new IoFirstQueue(MODEL_CALL_SHARE_MS);
  private readonly runs: RunBody;

  constructor(private readonly deps: ChatDeps) {
    this.starts = new Gate(deps.config.chat.startsAtOnce, START_SLOT_MS);
    this.runs = new RunBody(deps);
  }

  /**
   * executor.run through the start gate: left when the body reaches its model call (`started`,
   * which then waits for its share of the event loop: MODEL_CALL_SHARE_MS), or ends, or prepare fails.
   */
  private async gated<T>(
    userId: string,
    sessionId: string,
    from: string[],
    prepare: (state: RunState, claimed: Claimed, started: () => Promise<void>) => Promise<T>,
    body: (state: RunState, claimed: Claimed, started: () => Promise<void>) => Promise<RunEnd>,
    how: RunStart,
    opening?: RunOpening,
  ): Promise<T> {
    const leave = await this.starts.enter();
    const started = () => {
      leave();
      return this.modelCalls.wait();
    };
    try {
      return await this.deps.executor.run(
        userId,
        sessionId,
        from,
        (state, claimed) => prepare(state, claimed, started),
        (state, claimed) => body(state, claimed, started).finally(leave),
        how,
        opening,
      );
    } catch (e) {
      leave();
      throw e;
    }
  }

  /**
   * chat:send: everything is validated before anything is stored; then the executor runs it.
   * `origin` says who sent it when it is not a person at a client (scheduler, task runs, replay):
   * those runs, and headless ones, are unattended (docs/policy.md).
   */
  async send(userId: string, raw: unknown, origin: 'chat' | 'scheduled' | 'task' | 'replay' = 'chat', onRun?: (runId: string) => void): Promise<{ turn_id: string | null }> {
    const parsed = ChatSend.safeParse(raw);
    if (!parsed.success) throw new AppError(422, 'VALIDATION_ERROR', issues(parsed.error));
    const p = parsed.data;
    if (p.whatif && p.askuser_answer) throw new AppError(422, 'VALIDATION_ERROR', 'whatif: not with askuser_answer');
    if (p.whatif && typeof p.message !== 'string') throw new AppError(422, 'VALIDATION_ERROR', 'whatif: the message must be text');
    if (p.whatif) {
      if (!this.deps.hooks.has('whatif.fork')) throw new AppError(422, 'VALIDATION_ERROR', 'whatif: not supported by this server');
      await this.deps.hooks.call('whatif.check', { userId, sessionId: p.session_id, whatif: p.whatif, hasMessage: typeof p.message === 'string' && p.message.trim() !== '' });
    }
    await this.admit(userId, p.session_id, p.askuser_answer ? (origin === 'chat' ? 'answer' : origin) : origin === 'chat' && p.headless ? 'headless' : origin);
    if (p.askuser_answer) return this.answer(userId, p.session_id, p.askuser_answer, origin, onRun);
    if (p.output_schema && !p.headless) throw new AppError(422, 'VALIDATION_ERROR', 'output_schema: requires headless: true');
    if (p.output_schema) {
      try {
        new Ajv({ strict: false }).compile(p.output_schema);
      } catch (e) {
        throw new AppError(422, 'VALIDATION_ERROR', `output_schema: not a valid JSON Schema (${(e as Error).message})`);
      }
    }
    let text = typeof p.message === 'string' ? p.message : p.message.filter((m) => m.type === 'text').map((m) => (m as { text: string }).text).join('\n');
    if (!text.trim() && typeof p.message === 'string' && !p.whatif) throw new AppError(422, 'VALIDATION_ERROR', 'message: must not be empty');
    const from = ['created', 'completed', 'failed', 'interrupted'];
    // Without a what-if (which changes the branch and the text once the session is claimed), the
    // user turn and chat:start are stored by the claim's own statement: one round trip.
    const opening: RunOpening | undefined = p.whatif ? undefined : this.openingOf(userId, p.session_id, p.message, text, p.mode ?? null, !!p.headless);
    let opts!: RunOptions;
    return this.gated(
      userId,
      p.session_id,
      from,
      async (state, claimed, started) => {
        onRun?.(state.info.runId);
        opts = { started, mode: p.mode ?? claimed.mode, headless: !!p.headless, schema: p.output_schema, firstMessage: claimed.next_sequence === 0 && !p.whatif };
        let user = opening?.turn;
        let message = p.message;
        if (!user) {
          const forked = p.whatif && (await this.deps.hooks.call('whatif.fork', { userId, sessionId: p.session_id, whatif: p.whatif }));
          if (p.whatif && forked) {
            text = withQuotes(text.trim() ? text : forked.original, p.whatif.quotes);
            message = text;
          }
          state.emit('chat:start', { mode: opts.mode, headless: opts.headless });
          user = state.newTurn('user', 'root', null, 'completed');
          user.blocks = this.userTurn(message).blocks;
          await state.addTurn(user, message);
        }
        opts.user = { turn: user, content: message };
        opts.checkpoint = (await this.opening(state, user, text, claimed.recall)).deferred;
        return { turn_id: user.turn_id };
      },
      (state, claimed) => this.runs.execute(state, claimed, opts),
      runStart(origin === 'chat' && p.headless ? 'headless' : origin),
      opening,
    );
  }

  /**
   * The run.opening step of a new message (checkpoint, memory recall), awaited before the prompt is
   * built; answers what its contributions deferred (awaited before the first tool and the run's
   * end). Its contributions log their own failures (they must not throw); it never fails the run.
   */
  private async opening(state: RunState, turn: Turn, text: string, recall: boolean): Promise<{ deferred?: Promise<void> }> {
    const works: Promise<unknown>[] = [];
    const defer = (work: Promise<unknown>) => void works.push(work.catch(() => {}));
    await this.deps.hooks.call('run.opening', { run: state.info, turn, text, recall, defer }).catch(() => {});
    return { deferred: works.length ? Promise.all(works).then(() => {}) : undefined };
  }

  /**
   * A new message's opening, stored by its claim: the user turn, chat:start, and the rows features
   * store with the claim (run.claim: the checkpoint of an empty session folder).
   */
  private openingOf(userId: string, sessionId: string, message: ChatSend['message'], text: string, mode: string | null, headless: boolean): RunOpening {
    const turn = this.userTurn(message);
    const writes = this.deps.hooks.fields('run.claim', { userId, sessionId, turn, text });
    return { turn, content: message, mode, headless, writes: writes && Object.values(writes) };
  }

  /** The user turn of a message, before its run's claim gives it a sequence and a model. */
  private userTurn(message: ChatSend['message']): Turn {
    const turn = newTurn({ role: 'user', loopId: 'root', parent: null, status: 'completed', sequence: 0, model: '', contextWindow: this.deps.config.model.contextWindow });
    if (typeof message === 'string') turn.blocks.push({ type: 'text', content: message, tool_call_id: null, tool_name: null, display_name: null });
    else
      for (const part of message)
        turn.blocks.push({ type: part.type === 'text' ? 'text' : 'image', content: part.type === 'text' ? part.text : part.image_url.url, tool_call_id: null, tool_name: null, display_name: null });
    return turn;
  }

  /** The run.before gate (a spent budget): refused before anything is claimed or stored. */
  private async admit(userId: string, sessionId: string, origin: RunOrigin) {
    const refused = await this.deps.hooks.ask('run.before', { userId, sessionId, origin });
    if (refused) throw new AppError(refused.status ?? 429, refused.code, refused.message);
  }

  /**
   * chat:send with askuser_answer: validated against the pending question (nothing changes when it
   * is wrong), then the paused loop resumes: chat:start, tool_result on the paused turn, next turns.
   */
  private async answer(userId: string, sessionId: string, a: Answer, origin: 'chat' | 'scheduled' | 'task' | 'replay', onRun?: (runId: string) => void) {
    const status = await this.deps.executor.status(userId, sessionId);
    if (!status) throw Errors.notFound('session');
    if (status === 'running') throw Errors.sessionBusy();
    const stored = await this.deps.conversation.turns(sessionId);
    const turn = stored.find((t) => t.tool_calls.some((c) => c.id === a.tool_call_id && c.status === 'awaiting_answer'));
    if (status !== 'waiting_for_input' || !turn) throw new AppError(409, 'NO_PENDING_QUESTION', `no pending question with tool_call_id ${a.tool_call_id}`);
    const call = turn.tool_calls.find((c) => c.id === a.tool_call_id)!;
    const ref = call.pending_question_ref;
    const approval = isApproval(ref) ? { ref, ...approvalChoice(a) } : null;
    const first = approval && firstApproval(turn);
    if (first && first.id !== call.id) throw new AppError(409, 'NO_PENDING_QUESTION', `approvals are answered in the order they were asked: answer ${first.id} first`);
    const text = approval ? rejectionText(approval.ref, approval.reason) : answerText((JSON.parse(call.arguments) as { questions: Question[] }).questions, a);
    let opts!: RunOptions;
    return this.gated(
      userId,
      sessionId,
      ['waiting_for_input'],
      async (state, claimed, started) => {
        onRun?.(state.info.runId);
        opts = { started, mode: claimed.mode, headless: false, resumeFrom: turn };
        state.emit('chat:start', { mode: claimed.mode, headless: false });
        if (approval) await this.deps.hooks.call('approval.answered', { userId, sessionId, call, ref: approval.ref, choice: approval.choice });
        if (approval && approval.choice !== 'deny') {
          // Allowed: the call runs once the run's body starts (announced as running meanwhile).
          state.patch(turn, { patch_type: 'update_tool_call', data: { id: call.id, status: 'pending' } });
          opts.approved = call;
        } else {
          state.patch(turn, { patch_type: 'tool_result', data: { tool_call_id: call.id, result: text, status: approval ? 'error' : 'done', duration_ms: 0 } });
          // The paused turn's status after the answer (completed, or paused while another of its
          // calls waits), as a turn:end: a client keeps each turn as its last turn:end says.
          if (!hasOpenCalls(turn)) turn.status = 'completed';
          await state.endTurn(turn, turn.status);
          return { turn_id: null };
        }
        await this.deps.turns.update(turn);
        return { turn_id: null };
      },
      (state, claimed) => this.runs.execute(state, claimed, opts),
      runStart(origin === 'chat' ? 'answer' : origin),
    );
  }

  stop(userId: string, sessionId: string) {
    return this.deps.executor.stop(userId, sessionId);
  }

  systemPrompt(userId: string, sessionId: string, mode: string, run?: Pick<PromptContext, 'memoryEnabled' | 'userTurn' | 'setup'>): Promise<string> {
    return this.deps.prompt.build({ userId, sessionId, mode, ...run });
  }
}
