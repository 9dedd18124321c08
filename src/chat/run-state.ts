import type { Config } from '../config/index.js';
import { newId } from '../lib/ids.js';
import type { EventLog } from './events.js';
import type { TurnStore } from './turn-store.js';
import { applyPatch, COMPACTION_FIELDS, type Patch, type Turn } from './turns.js';

/**
 * Where a run's turns go: each change is applied by the one reducer, stored, and sent as the
 * session's next event. The only writer of a running session's turns and events.
 */
export class TurnJournal {
  constructor(
    readonly sessionId: string,
    private readonly log: EventLog,
    private readonly turns: TurnStore,
  ) {}

  emit(name: string, data: Record<string, unknown> = {}) {
    return this.log.emit(this.sessionId, name, data);
  }

  async start(turn: Turn, content: unknown) {
    await this.turns.insert(this.sessionId, turn, content);
    this.emit('turn:start', { turn_id: turn.turn_id, role: turn.role, status: turn.status, parent_fork_tool_call_id: turn.parent_fork_tool_call_id });
  }

  patch(turn: Turn, p: Patch) {
    applyPatch(turn, p);
    this.emit('turn:patch', { turn_id: turn.turn_id, patch_type: p.patch_type, data: p.data });
  }

  async end(turn: Turn) {
    await this.turns.update(turn);
    this.emit('turn:end', { turn_id: turn.turn_id, status: turn.status, turn: structuredClone(turn) });
  }
}

export interface RunIdentity {
  sessionId: string;
  userId: string;
  model: string;
  /** Aborted by chat:stop and shutdown. */
  signal: AbortSignal;
  /** `sequence` of the run's first new turn. */
  sequence: number;
}

/** The state one run (one chat:send) shares across its loops and sub-agents; writes go through its journal. */
export class RunState {
  readonly live = new Map<string, Turn>();
  modelCalls = 0;
  readonly sessionId: string;
  readonly userId: string;
  readonly model: string;
  readonly signal: AbortSignal;
  private sequence: number;

  constructor(
    id: RunIdentity,
    readonly config: Config,
    private readonly journal: TurnJournal,
  ) {
    ({ sessionId: this.sessionId, userId: this.userId, model: this.model, signal: this.signal, sequence: this.sequence } = id);
  }

  emit(name: string, data: Record<string, unknown> = {}) {
    return this.journal.emit(name, data);
  }

  newTurn(role: Turn['role'], loopId: string, parent: string | null, status: Turn['status']): Turn {
    return {
      id: newId('entry'),
      sequence: this.sequence++,
      turn_id: newId('turn'),
      loop_id: loopId,
      kind: 'message',
      role,
      status,
      blocks: [],
      tool_calls: [],
      model: this.model,
      usage: { input_tokens: 0, output_tokens: 0 },
      duration_ms: 0,
      started_at: new Date().toISOString(),
      context_window: this.config.model.contextWindow,
      memory_refs: null,
      parent_fork_tool_call_id: parent,
      ...COMPACTION_FIELDS,
    };
  }

  async startTurn(turn: Turn, content: unknown = null) {
    this.live.set(turn.id, turn);
    await this.journal.start(turn, content);
  }

  patch(turn: Turn, p: Patch) {
    this.journal.patch(turn, p);
  }

  async endTurn(turn: Turn, status: Turn['status'], startedMs?: number) {
    turn.status = status;
    if (startedMs !== undefined) turn.duration_ms = Math.round(performance.now() - startedMs);
    await this.journal.end(turn);
    this.live.delete(turn.id);
  }
}
