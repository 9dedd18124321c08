import type { ModelMessage } from '../../core/models/port.js';
import type { RunExecutor } from '../../core/engine/run-executor.js';
import type { RunState } from '../../core/engine/run-state.js';
import { toModelMessages } from '../../core/conversation/history.js';
import type { StoredTurn } from '../../core/conversation/turn-store.js';
import type { Turn } from '../../core/conversation/turns.js';
import { Errors } from '../../platform/server/errors.js';
import { messagesTokens, messagesTokensAtMost } from '../../core/models/tokenizer.js';
import type { Compactor } from './compactor.js';

export interface CompactionDeps {
  executor: RunExecutor;
  compactor: Compactor;
  stored(sessionId: string): Promise<StoredTurn[]>;
  sessions: { getOwned(userId: string, id: string): Promise<unknown> };
  /** Auto compaction past this share of the context window (AGENTSVC_COMPACT_AT). */
  compactAt: number;
  /** The context window of a model id (its entry of the models config). */
  contextWindow(model: string): number;
}

export type Compacted = { entry: Turn } | { compaction_id: null; reason: string };

/**
 * Manual compaction (`chat:compact`, `POST .../compact`) as a run of its own (chat:start with mode
 * `compact` ... chat:end with the compaction id), and the loop's automatic compaction.
 */
export class CompactionService {
  /** Runs whose automatic compaction did not help: not tried again in that run (no loops). */
  private gaveUp = new WeakSet<RunState>();

  constructor(private readonly d: CompactionDeps) {}

  /** Starts a compaction; `done` resolves with the finished entry. Too little to compact: no run at all. */
  async start(userId: string, sessionId: string): Promise<{ started: true; done: Promise<Turn> } | { started: false; reason: string }> {
    await this.d.sessions.getOwned(userId, sessionId);
    // Busy before anything else (docs/time-travel.md): a running session's turns are not final yet, so
    // "too little to compact" would answer about a history that is still growing.
    const before = await this.d.executor.status(userId, sessionId);
    if (before === 'running') throw Errors.sessionBusy();
    const first = this.d.compactor.plan(await this.d.stored(sessionId));
    if ('skipped' in first) return { started: false, reason: first.skipped };
    let settle!: (t: Turn) => void;
    let fail!: (e: unknown) => void;
    const done = new Promise<Turn>((res, rej) => {
      settle = res;
      fail = rej;
    });
    done.catch(() => {});
    await this.d.executor.run(
      userId,
      sessionId,
      ['created', 'completed', 'failed', 'interrupted'],
      async (state) => {
        state.emit('chat:start', { mode: 'compact', headless: false });
        return null;
      },
      async (state) => {
        try {
          const plan = this.d.compactor.plan(await this.d.stored(sessionId));
          if ('skipped' in plan) throw Errors.conflict('NOTHING_TO_COMPACT', plan.skipped);
          const entry = await this.d.compactor.run(state, 'manual', plan);
          settle(entry);
          const ok = entry.status === 'completed';
          return { status: ok ? 'completed' : 'failed', finish_reason: ok ? 'stop' : 'error', result: { compaction_id: entry.compaction_id }, sessionStatus: before ?? 'completed' };
        } catch (e) {
          fail(e);
          throw e;
        }
      },
      { origin: 'compaction', unattended: false },
    );
    return { started: true, done };
  }

  /** REST: the finished entry, or why there was nothing to do. */
  async compact(userId: string, sessionId: string): Promise<Compacted> {
    const r = await this.start(userId, sessionId);
    if (!r.started) return { compaction_id: null, reason: r.reason };
    return { entry: await r.done };
  }

  /**
   * Between two model calls of a run: past `compactAt` of the context window, compact and hand the
   * loop its new history (system prompt + summary + kept turns); null when nothing changed.
   */
  async auto(state: RunState, messages: ModelMessage[]): Promise<ModelMessage[] | null> {
    if (this.gaveUp.has(state)) return null;
    const limit = this.d.compactAt * this.d.contextWindow(state.model);
    if (messagesTokensAtMost(messages) < limit || messagesTokens(messages) < limit) return null;
    const stored = await this.d.stored(state.sessionId);
    const plan = this.d.compactor.plan(stored);
    if ('skipped' in plan) return null;
    // Cheap first: eliding old tool outputs, when that alone brings the history under the threshold.
    const masking = this.d.compactor.maskable(stored, plan);
    const entry =
      masking.outputs > 0 && masking.tokensAfter < limit ? await this.d.compactor.mask(state, 'auto', plan) : await this.d.compactor.run(state, 'auto', plan);
    if (entry.failure_reason) {
      this.gaveUp.add(state);
      return null;
    }
    return [messages[0], ...toModelMessages(await this.d.stored(state.sessionId))];
  }
}
