import type { ChatService } from './chat-service.js';
import type { HookEvents, Hooks, RunOrigin } from './hooks.js';

/** How a run ended, as whoever started it learns it. */
export interface RunOutcome {
  runId: string;
  sessionId: string;
  userId: string;
  origin: RunOrigin;
  status: 'completed' | 'failed' | 'interrupted';
  /** `stop`, `max_turns`, `tool_question` (paused for an answer), `error`, `interrupted`, ... */
  finish_reason: string;
  error: { code: string; message: string } | null;
}

export interface RunHandle {
  runId: string;
  sessionId: string;
  /** The user turn a new message stored (null for an answer). */
  turnId: string | null;
  /** Settles when the run ends in this process (a run lost with its node is told by `onEnded`). */
  ended: Promise<RunOutcome>;
}

/** The messages of a chat:send that a run can start from (validated by the chat service). */
export type RunInput = { session_id: string } & Record<string, unknown>;

const outcome = (e: HookEvents['run.ended']): RunOutcome => ({
  runId: e.run.runId,
  sessionId: e.run.sessionId,
  userId: e.run.userId,
  origin: e.run.origin,
  status: e.status,
  finish_reason: e.finish_reason,
  error: e.error,
});

/**
 * The runs API: start a run as a chat:send would and get a handle whose `ended` says how it ended,
 * instead of subscribing to every session event to find its chat:end. Backed by the session's run
 * record (sessions.run_id, run_origin, written by the claim): a run whose node died is closed by
 * lease recovery on another node, which tells `run.ended` with the same id and origin, so
 * `onEnded` listeners (scheduled tasks, task runs) settle wherever the run ends.
 */
export class Runs {
  private readonly waiting = new Map<string, (o: RunOutcome) => void>();

  constructor(
    private readonly chat: Pick<ChatService, 'send'>,
    private readonly hooks: Hooks,
  ) {
    hooks.on('run.ended', (e) => {
      const settle = this.waiting.get(e.run.runId);
      if (!settle) return;
      this.waiting.delete(e.run.runId);
      settle(outcome(e));
    });
  }

  /** Start a run (errors as chat:send's: 404, 409 SESSION_BUSY, 422, 429). */
  async start(userId: string, input: RunInput, origin: 'chat' | 'scheduled' | 'task' | 'replay'): Promise<RunHandle> {
    let settle!: (o: RunOutcome) => void;
    const ended = new Promise<RunOutcome>((r) => (settle = r));
    let runId = '';
    // Registered as the run is claimed, before its body starts: no end can be missed.
    const r = await this.chat.send(userId, input, origin, (id) => {
      runId = id;
      this.waiting.set(id, settle);
    });
    return { runId, sessionId: input.session_id, turnId: r.turn_id, ended };
  }

  /** Every end of a run of `origin` in this process (own runs, and runs it recovered). */
  onEnded(origin: RunOrigin, fn: (o: RunOutcome) => unknown): () => void {
    return this.hooks.on('run.ended', (e) => (e.run.origin === origin ? fn(outcome(e)) : undefined));
  }
}
