import { errField } from '../../platform/lib/logger.js';
import type { SeqStart } from '../events/events.js';
import { isUnattended, type RunOrigin } from './run-info.js';
import { cancelOpenCalls, closeTurn } from './loop.js';
import { RunState, TurnJournal } from './run-state.js';
import type { OrphanRow, RunStore } from './run-store.js';
import type { ExecutorDeps } from './run-types.js';
import { applyPatch, type Patch, type Turn } from '../conversation/turns.js';

/** Bound on the turns kept for a closing write (a full disk that lasts): memory stays bounded. */
const MAX_UNCLOSED = 10_000;

/** Where a run's seqs start, and how the log raises the run's reservation as it goes. */
export function seqStart(store: RunStore, sessionId: string, owner: string, at: { last_seq: number; seq_reserved: number }): SeqStart {
  return { last: at.last_seq, reserved: at.seq_reserved, extend: (upTo) => store.reserveSeqs(sessionId, owner, upTo) };
}

/** Where a run's (or a closing's) turns and events go. */
export function journal(deps: Pick<ExecutorDeps, 'log' | 'turns'>, sessionId: string) {
  return new TurnJournal(sessionId, deps.log, deps.turns);
}

/** What recovery needs of the executor whose process it runs in. */
export interface RecoveryHost {
  readonly instanceId: string;
  /** Sessions this process runs, or is claiming: never taken as orphans. */
  mine(): string[];
  /** Run `fn` after every earlier start/end transition of this session has finished. */
  exclusive<T>(sessionId: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * Runs and turns left behind (docs/sessions-and-runs.md and docs/scale-out.md): runs no live process owns are closed `interrupted`
 * with their chat:end; turns of failed runs whose closing write failed (a full disk) are written
 * again until it works, and at start those a previous process left streaming are closed.
 */
export class RunRecovery {
  /**
   * Turns of failed runs whose closing write failed (a full disk), as they were closed: written
   * again at each heartbeat until it works, so no turn stays `streaming` once space returns.
   */
  private unclosed = new Map<string, Turn>();

  constructor(
    private readonly deps: ExecutorDeps,
    private readonly host: RecoveryHost,
  ) {}

  /** A turn closed in memory whose write failed: written again later. */
  keepUnclosed(turn: Turn) {
    if (this.unclosed.size < MAX_UNCLOSED) this.unclosed.set(turn.id, turn);
  }

  /**
   * Close runs that no live process owns (crashed or killed owner, or a claim this process lost):
   * the streaming turn is rebuilt from its stored patches, its unfinished tool calls are
   * cancelled, it ends `interrupted`, and chat:end goes out, so no session stays `running`.
   */
  async recover(othersDead = false): Promise<string[]> {
    const mine = this.host.mine();
    const orphans = await this.deps.store.orphans(this.host.instanceId, mine, othersDead);
    const recovered: string[] = [];
    for (const o of orphans) {
      const done = await this.host.exclusive(o.id, () => this.closeOrphan(o)).catch((e) => {
        this.deps.logger.error({ ...errField(e), session_id: o.id }, 'could not close an orphaned run');
        return false;
      });
      if (done) recovered.push(o.id);
    }
    await this.deps.store.forgetDeadInstances();
    return recovered;
  }

  private async closeOrphan(o: OrphanRow): Promise<boolean> {
    if (this.host.mine().includes(o.id)) return false;
    const marker = `recovering:${o.run_owner ?? 'none'}:${this.host.instanceId}:${Date.now()}`;
    const taken = await this.deps.store.takeOver(o, marker);
    if (!taken) return false;
    this.deps.log.open(o.id, seqStart(this.deps.store, o.id, marker, taken));
    try {
      const origin = (o.run_origin ?? 'chat') as RunOrigin;
      const id = { sessionId: o.id, userId: o.user_id, model: o.model ?? this.deps.config.model.default, signal: AbortSignal.abort(), sequence: 0, runId: o.run_id ?? undefined, origin, unattended: isUnattended(origin) };
      const state = new RunState(id, this.deps.config, journal(this.deps, o.id));
      for (const { turn } of await this.deps.turns.list(o.id)) {
        if (turn.status !== 'streaming') continue;
        turn.blocks = [];
        turn.tool_calls = [];
        for (const p of await this.deps.events.turnPatches(o.id, turn.turn_id)) applyPatch(turn, p as Patch);
        state.live.set(turn.id, turn);
        await closeTurn(state, turn, 'interrupted');
      }
      // As a run's own end: stored, released, then published.
      const ev = this.deps.log.emit(o.id, 'chat:end', { status: 'interrupted', result: null, finish_reason: 'interrupted' }, { publish: false });
      await this.deps.log.flush();
      await this.deps.log.reserving(o.id);
      await this.deps.store.release(o.id, marker, 'interrupted', ev.payload.seq);
      this.deps.log.publish(ev);
      // Told like a run's own end, on the node that closed it (scheduled and task runs settle so).
      void this.deps.hooks.emit('run.ended', { run: state.info, status: 'interrupted', finish_reason: 'interrupted', error: { code: 'RUN_LOST', message: 'the node running it stopped' } });
    } finally {
      this.deps.log.release(o.id);
    }
    return true;
  }

  /**
   * Turns that failed runs could not close before their process stopped (the retry of
   * `closeUnclosed` lived in that process's memory: a full disk, then a restart). Each is rebuilt from
   * its stored patches, its open tool calls cancelled, and written `failed`; no events are sent, as
   * its run's system:error and chat:end were. Once at start: the query scans `turns` by status.
   */
  async closeStranded() {
    const stranded = await this.deps.turns.stranded().catch((e) => {
      this.deps.logger.error(errField(e), 'could not look for turns left streaming');
      return [];
    });
    for (const { session_id, turn } of stranded) {
      try {
        const patches = await this.deps.events.turnPatches(session_id, turn.turn_id);
        if (patches.length) {
          turn.blocks = [];
          turn.tool_calls = [];
          for (const p of patches) applyPatch(turn, p as Patch);
        }
        for (const p of cancelOpenCalls(turn, 'failed')) applyPatch(turn, p);
        turn.status = 'failed';
        await this.deps.turns.update(turn);
        this.deps.logger.warn({ session_id, turn_id: turn.turn_id }, 'closed a turn a failed run left streaming');
      } catch (e) {
        this.deps.logger.error({ ...errField(e), session_id }, 'could not close a turn left streaming');
      }
    }
  }

  /** Write the closed turns of failed runs whose closing write failed; stops at the first that fails again. */
  async closeUnclosed() {
    for (const [id, turn] of this.unclosed) {
      try {
        await this.deps.turns.update(turn);
      } catch {
        return;
      }
      this.unclosed.delete(id);
    }
  }
}
