import { setMaxListeners } from 'node:events';
import { newId, randomToken } from '../../platform/lib/ids.js';
import { errField } from '../../platform/lib/logger.js';
import { Errors } from '../../platform/server/errors.js';
import type { SessionEvent } from '../events/events.js';
import { isUnattended, type RunOrigin } from './run-info.js';
import { closeTurn, RunStopped } from './loop.js';
import { describeFailure, EveryMinute } from '../events/run-failure.js';
import { journal, RunRecovery, seqStart } from './run-recovery.js';
import { openingEvents, type RunOpening, RunState } from './run-state.js';
import { type Claimed, leaseRenewMs } from './run-store.js';
import type { Turn } from '../conversation/turns.js';

import type { ExecutorDeps, RunEnd, RunStart } from './run-types.js';

export type { ExecutorDeps, RunEnd, RunStart };

interface ActiveRun {
  state: RunState;
  abort: AbortController;
  /** Settles when the run has fully ended: session released, chat:end sent, log flushed. */
  ended: Promise<void>;
}

/** An answer to a question of a scheduled, task or replay run goes on as that run (docs/policy.md). */
function inherited(how: RunStart, recorded: string): RunStart {
  if (recorded === how.origin) return how;
  const origin = recorded as RunOrigin;
  return { origin, unattended: isUnattended(origin) };
}

const interruptedEnd: RunEnd = { status: 'interrupted', finish_reason: 'interrupted', result: null, sessionStatus: 'interrupted' };

/**
 * The one owner of a session's run lifecycle in this process. A run's start (claim, open the event
 * log) and its end (release the claim, chat:end, flush, forget) are serialised per session, so the
 * next chat:send, sent the moment chat:end arrives, starts only after the previous run is wholly
 * gone. Nothing a run throws escapes: it ends that run `failed` with system:error.
 */
export class RunExecutor {
  readonly instanceId = `inst_${randomToken(16)}`;
  private active = new Map<string, ActiveRun>();
  /** Sessions between their claim and their entry in `active` (recovery must not take them). */
  private claiming = new Set<string>();
  private lanes = new Map<string, Promise<unknown>>();
  private heartbeat: NodeJS.Timeout | null = null;
  private offSignal: (() => void) | null = null;
  private offLost: (() => void) | null = null;
  private closed = false;
  private readonly storageFull: EveryMinute;
  /** The context windows of the models config, for a new message's user turn (its claim resolves the model). */
  private readonly windows: { windows: Record<string, number>; defaultWindow: number };
  private readonly recovery: RunRecovery;

  constructor(private readonly deps: ExecutorDeps) {
    this.recovery = new RunRecovery(deps, { instanceId: this.instanceId, mine: () => [...this.active.keys(), ...this.claiming], exclusive: (id, fn) => this.exclusive(id, fn) });
    const model = deps.config.model;
    this.windows = { windows: Object.fromEntries(model.entries.map((e) => [e.id, e.contextWindow])), defaultWindow: model.contextWindow };
    this.storageFull = new EveryMinute(deps.logger, 'runs fail: storage is full');
  }

  async start() {
    await this.deps.store.register(this.instanceId);
    // One node (no REDIS_URL): every run left running belongs to a predecessor that is gone, so it
    // is closed now, before the service listens (docs/sessions-and-runs.md). Several nodes: leases decide.
    await this.recover(!this.deps.config.redisUrl);
    await this.recovery.closeStranded();
    // A run whose events cannot be stored (a full disk) fails now, its turns closed, instead of
    // streaming on into a log with holes (docs/errors.md); replay answers those holes with a resync.
    this.offLost = this.deps.log.onLost((sessionId, error) => {
      const a = this.active.get(sessionId);
      if (!a || a.state.signal.aborted) return;
      a.state.failure = error;
      a.abort.abort(error);
    });
    // chat:stop received by another node for a run this node owns.
    this.offSignal = this.deps.log.bus.onSignal((sig) => {
      if (sig.name !== 'stop') return;
      const a = this.active.get(String(sig.data.session_id));
      if (a && a.state.userId === sig.data.user_id) a.abort.abort(new Error('stopped'));
    });
    // The lease of this node's runs: renewed every leaseRenewMs; past AGENTSVC_NODE_STALE_SECONDS any node closes them.
    this.heartbeat = setInterval(() => {
      void this.deps.store
        .heartbeat(this.instanceId)
        .then(() => this.recovery.closeUnclosed())
        .then(() => this.recover())
        .catch((e) => this.deps.logger.error(errField(e), 'heartbeat or run recovery failed'));
    }, leaseRenewMs(this.deps.config.nodeStaleSeconds));
    this.heartbeat.unref();
  }

  status(userId: string, sessionId: string) {
    return this.deps.store.status(userId, sessionId);
  }

  isRunning(sessionId: string) {
    return this.active.has(sessionId);
  }

  liveTurns(sessionId: string): Turn[] {
    return [...(this.active.get(sessionId)?.state.live.values() ?? [])];
  }

  /** Run `fn` after every earlier start/end transition of this session has finished. */
  private exclusive<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.lanes.get(sessionId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.lanes.set(sessionId, tail);
    void tail.then(() => {
      if (this.lanes.get(sessionId) === tail) this.lanes.delete(sessionId);
    });
    return next;
  }

  /**
   * Start a run: claim the session (from one of `from`), open its event log, then `prepare` and
   * answer its result; `body` goes on in the background. Whatever `prepare` or `body` throws ends
   * the run `failed` (or `interrupted` when stopped) and releases the session. `opening`: a new
   * message's user turn and first events, stored by the claim's own statement and sent once it
   * holds (a run start is one round trip).
   */
  async run<T>(
    userId: string,
    sessionId: string,
    from: string[],
    prepare: (state: RunState, claimed: Claimed) => Promise<T>,
    body: (state: RunState, claimed: Claimed, prepared: T) => Promise<RunEnd>,
    how: RunStart = { origin: 'chat', unattended: false },
    opening?: RunOpening,
  ): Promise<T> {
    if (this.closed) throw Errors.unavailable('SHUTTING_DOWN', 'the service is shutting down');
    const { state, claimed, entry, settle } = await this.exclusive(sessionId, async () => {
      if (this.closed) throw Errors.unavailable('SHUTTING_DOWN', 'the service is shutting down');
      this.claiming.add(sessionId);
      try {
        const defaultModel = this.deps.config.model.default;
        const stored = opening && { turn: opening.turn, content: opening.content, events: openingEvents(opening), defaultModel, ...this.windows, writes: opening.writes };
        const runId = newId('run');
        const claimed = await this.deps.store.claim(userId, sessionId, from, this.instanceId, this.deps.config.chat.runsPerUser, { id: runId, origin: how.origin }, stored);
        try {
          // The claim read the session's last seq, reserved the first block and read the next turn
          // sequence: no round trip more.
          this.deps.log.open(sessionId, seqStart(this.deps.store, sessionId, this.instanceId, claimed));
          const abort = new AbortController();
          // Every parallel tool call (20 sub-agents at once) and model call listens to the run's
          // signal: more than Node's default of 10 listeners is expected, not a leak warning.
          setMaxListeners(256, abort.signal);
          const model = claimed.model ?? defaultModel;
          const sequence = claimed.next_sequence;
          const state = new RunState({ sessionId, userId, model, signal: abort.signal, sequence, memoryEnabled: claimed.memory_enabled, setup: claimed.session_setup, runId, ...inherited(how, claimed.run_origin) }, this.deps.config, journal(this.deps, sessionId));
          if (opening) state.opened(opening, claimed.mode);
          let settle!: () => void;
          const entry: ActiveRun = { state, abort, ended: new Promise<void>((r) => (settle = r)) };
          this.active.set(sessionId, entry);
          return { state, claimed, entry, settle };
        } catch (e) {
          // The claim is ours and nothing ran yet: give the session back as it was left, failed.
          const last = this.deps.log.current(sessionId) ?? claimed.last_seq;
          this.deps.log.release(sessionId);
          await this.deps.store.release(sessionId, this.instanceId, 'failed', last).catch(() => {});
          throw e;
        }
      } finally {
        this.claiming.delete(sessionId);
      }
    });
    void this.deps.hooks.emit('run.started', { run: state.info });
    let prepared: T;
    try {
      prepared = await prepare(state, claimed);
    } catch (e) {
      void this.end(entry, await this.failed(state, e)).finally(settle);
      throw e;
    }
    void (async () => {
      let end: RunEnd;
      try {
        end = await body(state, claimed, prepared);
      } catch (e) {
        end = await this.failed(state, e);
      }
      await this.end(entry, end);
    })()
      .catch((e) => this.deps.logger.error({ ...errField(e), session_id: sessionId }, 'ending a run failed'))
      .finally(settle);
    return prepared;
  }

  /** A run that threw: system:error (unless it was stopped), every live turn closed. Never throws. */
  private async failed(state: RunState, thrown: unknown): Promise<RunEnd> {
    if (thrown instanceof RunStopped && !state.signal.aborted) return this.stopped(state, thrown);
    const e = state.failure ?? thrown;
    const interrupted = state.signal.aborted && !state.failure;
    const { code, message, internal } = describeFailure(e);
    if (!interrupted) {
      const who = { session_id: state.sessionId, user_id: state.userId, code };
      // Every failed run is in the log (docs/operations.md): a bug at error with its stack, a known cause
      // (the model unreachable, a runner down) at warn with its message; a full disk once a minute.
      if (internal) this.deps.logger.error({ ...errField(e), ...who }, 'run failed with an unexpected error');
      else if (code === 'INSUFFICIENT_STORAGE') this.storageFull.error({ ...errField(e), ...who });
      else this.deps.logger.warn({ ...who, cause: (e as Error)?.message ?? String(e) }, `run failed: ${message}`);
      try {
        state.emit('system:error', { code, message });
      } catch (err) {
        this.deps.logger.error({ ...errField(err), session_id: state.sessionId }, 'could not send system:error');
      }
    }
    for (const t of [...state.live.values()]) {
      await closeTurn(state, t, interrupted ? 'interrupted' : 'failed').catch((err) => {
        // Closed in memory (calls cancelled, status set); its row is written again later.
        this.recovery.keepUnclosed(t);
        this.deps.logger.error({ ...errField(err), session_id: state.sessionId }, 'could not close a turn of a failed run; retrying');
      });
    }
    if (interrupted) return interruptedEnd;
    return { status: 'failed', finish_reason: 'error', result: null, sessionStatus: 'failed', error: { code, message } };
  }

  /**
   * A gate ended the run on purpose (a spent budget, docs/models-and-usage.md): system:error says why, open turns
   * close, and the run ends `completed` with the gate's finish_reason.
   */
  private async stopped(state: RunState, e: RunStopped): Promise<RunEnd> {
    try {
      state.emit('system:error', { code: e.code, message: e.message });
    } catch (err) {
      this.deps.logger.error({ ...errField(err), session_id: state.sessionId }, 'could not send system:error');
    }
    for (const t of [...state.live.values()]) await closeTurn(state, t, 'interrupted').catch(() => {});
    return { status: 'completed', finish_reason: e.finishReason, result: null, sessionStatus: 'completed', error: { code: e.code, message: e.message } };
  }

  /**
   * End a run in one ordered step, whatever fails in it: chat:end is stored with every event before
   * it, then the session is released, then chat:end is published. So the next run, on any node,
   * continues the seq after chat:end, and a client that sends the moment chat:end arrives finds the
   * session free.
   */
  private end(entry: ActiveRun, end: RunEnd): Promise<void> {
    const { state } = entry;
    return this.exclusive(state.sessionId, async () => {
      const ctx = { session_id: state.sessionId };
      let ev: SessionEvent | null = null;
      try {
        state.flush();
        // run.ending: what chat:end carries besides its status (the usage module's running totals).
        const fields = this.deps.hooks.fields('run.ending', { run: state.info });
        ev = this.deps.log.emit(state.sessionId, 'chat:end', { status: end.status, result: end.result, finish_reason: end.finish_reason, ...fields }, { publish: false });
      } catch (e) {
        this.deps.logger.error({ ...errField(e), ...ctx }, 'could not send chat:end');
      }
      await this.deps.log.flush().catch((e) => this.deps.logger.error({ ...errField(e), ...ctx }, 'could not write events'));
      // A reservation written after the release would leave the session's last seq a block high.
      await this.deps.log.reserving(state.sessionId);
      await this.deps.store
        .release(state.sessionId, this.instanceId, end.sessionStatus, this.deps.log.current(state.sessionId) ?? null)
        .catch((e) => this.deps.logger.error({ ...errField(e), ...ctx }, 'could not release a session'));
      if (ev) this.deps.log.publish(ev);
      if (this.active.get(state.sessionId) === entry) this.active.delete(state.sessionId);
      this.deps.log.release(state.sessionId);
      void this.deps.hooks.emit('run.ended', { run: state.info, status: end.status, finish_reason: end.finish_reason, error: end.error ?? null });
    });
  }

  /**
   * chat:stop: a run of this process is aborted and has ended (`interrupted`) within 2 s; a session
   * left `running` by nobody is closed now. `stopped` says whether a run was really ended.
   */
  async stop(userId: string, sessionId: string): Promise<{ stopped: boolean; status: string }> {
    const a = this.active.get(sessionId);
    if (a && a.state.userId === userId) {
      a.abort.abort(new Error('stopped'));
      await Promise.race([a.ended, new Promise((r) => setTimeout(r, 2000))]);
      return { stopped: true, status: (await this.deps.store.status(userId, sessionId)) ?? 'interrupted' };
    }
    let status = await this.deps.store.status(userId, sessionId);
    if (!status) throw Errors.notFound('session');
    if (status === 'running') {
      // Owned by another node: ask every node, and wait (2 s at most) for the owner to end it.
      this.deps.log.bus.signal({ name: 'stop', data: { session_id: sessionId, user_id: userId } });
      const until = Date.now() + 2000;
      while (status === 'running' && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 50));
        status = (await this.deps.store.status(userId, sessionId)) ?? 'deleted';
      }
      if (status !== 'running') return { stopped: true, status };
      const closed = await this.recover();
      if (closed.includes(sessionId)) return { stopped: true, status: 'interrupted' };
    }
    return { stopped: false, status };
  }

  /**
   * Close runs that no live process owns (crashed or killed owner, or a claim this process lost):
   * each ends `interrupted` with its chat:end (src/core/engine/run-recovery.ts). Answers the sessions closed.
   */
  recover(othersDead = false): Promise<string[]> {
    return this.recovery.recover(othersDead);
  }

  /** Shutdown: stop every run (they end `interrupted`), then forget this instance. */
  async close() {
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.offSignal?.();
    this.offLost?.();
    const runs = [...this.active.values()];
    for (const a of runs) a.abort.abort(new Error('service shutting down'));
    await Promise.all(runs.map((a) => a.ended));
    await this.recovery.closeUnclosed();
    await this.deps.store.unregister(this.instanceId).catch(() => {});
  }
}
