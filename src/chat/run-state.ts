import type { Config } from '../config/index.js';
import { newId } from '../lib/ids.js';
import type { EventLog } from './events.js';
import type { TurnStore } from './turn-store.js';
import { applyPatch, COMPACTION_FIELDS, type Patch, type Turn } from './turns.js';

/** Everything one run (one chat:send) shares across its loops and sub-agents. */
export class RunState {
  readonly live = new Map<string, Turn>();
  modelCalls = 0;

  constructor(
    readonly sessionId: string,
    readonly userId: string,
    readonly model: string,
    readonly config: Config,
    readonly log: EventLog,
    readonly turns: TurnStore,
    readonly signal: AbortSignal,
    private sequence: number,
  ) {}

  emit(name: string, data: Record<string, unknown> = {}) {
    return this.log.emit(this.sessionId, name, data);
  }

  newTurn(role: Turn['role'], loopId: string, parent: string | null, status: Turn['status']): Turn {
    const entry = newId('entry');
    return {
      id: entry,
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
    await this.turns.insert(this.sessionId, turn, content);
    this.emit('turn:start', { turn_id: turn.turn_id, role: turn.role, status: turn.status, parent_fork_tool_call_id: turn.parent_fork_tool_call_id });
  }

  patch(turn: Turn, p: Patch) {
    applyPatch(turn, p);
    this.emit('turn:patch', { turn_id: turn.turn_id, patch_type: p.patch_type, data: p.data });
  }

  async endTurn(turn: Turn, status: Turn['status'], startedMs?: number) {
    turn.status = status;
    if (startedMs !== undefined) turn.duration_ms = Math.round(performance.now() - startedMs);
    await this.turns.update(turn);
    this.live.delete(turn.id);
    this.emit('turn:end', { turn_id: turn.turn_id, status, turn: structuredClone(turn) });
  }
}
