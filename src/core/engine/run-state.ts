import type { Config } from '../../platform/config/index.js';
import { contextWindowOf } from '../../platform/config/models.js';
import { newId } from '../../platform/lib/ids.js';
import type { RunInfo, RunOrigin } from './run-info.js';
import type { ClaimWrite } from './hook-catalogue.js';
import type { ServerEventData, ServerEventName } from '../events/catalogue.js';
import type { EventLog } from '../events/events.js';
import type { TurnStore } from '../conversation/turn-store.js';
import { applyPatch, COMPACTION_FIELDS, type Patch, type Turn } from '../conversation/turns.js';

/** The longest text one delta event carries. */
export const MAX_DELTA_CHARS = 16_384;

/** `text` cut into pieces of at most `max` characters, never between the halves of a surrogate pair. */
export function pieces(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(i + max, text.length);
    const c = text.charCodeAt(end - 1);
    if (end < text.length && c >= 0xd800 && c <= 0xdbff) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

/**
 * The start of a run for a new message, stored with its claim in one statement (RunStore.claim):
 * the user turn, whose sequence and model only the claim knows, and chat:start, whose `mode` is
 * the session's when null.
 */
export interface RunOpening {
  turn: Turn;
  content: unknown;
  mode: string | null;
  headless: boolean;
  /** What features store with the claim (the run.claim hook: a checkpoint). */
  writes?: ClaimWrite[];
}

const turnStart = (t: Turn) => ({ turn_id: t.turn_id, role: t.role, status: t.status, parent_fork_tool_call_id: t.parent_fork_tool_call_id });
const turnEnd = (t: Turn) => ({ turn_id: t.turn_id, status: t.status, turn: structuredClone(t) });

/** A run's first events: chat:start, then the user turn sent whole (as TurnJournal.add sends it). */
export function openingEvents(o: RunOpening): { name: string; data: Record<string, unknown> }[] {
  return [
    { name: 'chat:start', data: { mode: o.mode, headless: o.headless } },
    { name: 'turn:start', data: turnStart(o.turn) },
    { name: 'turn:end', data: turnEnd(o.turn) },
  ];
}

/** Patches whose text is appended: consecutive ones of a turn may travel as one event. */
const DELTAS = new Set(['add_content', 'add_thinking']);

/**
 * Where a run's turns go: each change is applied by the one reducer, stored, and sent as the
 * session's next event. The only writer of a running session's turns and events.
 *
 * Text deltas of a turn that arrive within one tick of the event loop (a model read carrying
 * several chunks, or a burst) go out as one patch with their texts joined: a client appends
 * `text_delta` either way, and each event still takes the next seq. A delta is applied to the
 * turn when its event is sent, so the live turn always matches the events sent so far. Any other
 * change of the run sends the held text first, so the order of the events is the order of the
 * changes.
 */
export class TurnJournal {
  private held: { turn: Turn; type: string; text: string } | null = null;
  private tick: NodeJS.Immediate | null = null;

  constructor(
    readonly sessionId: string,
    private readonly log: EventLog,
    private readonly turns: TurnStore,
  ) {}

  emit<N extends ServerEventName>(name: N, data: ServerEventData<N>) {
    this.flush();
    return this.log.emit(this.sessionId, name, data as Record<string, unknown>);
  }

  async start(turn: Turn, content: unknown) {
    this.flush();
    await this.turns.insert(this.sessionId, turn, content);
    this.emit('turn:start', turnStart(turn));
  }

  /**
   * A turn sent (turn:start) at once while its row is stored: its first patches need not wait for
   * the insert. The promise settles once the row is stored; the turn's end must wait for it.
   */
  open(turn: Turn, content: unknown): Promise<void> {
    this.flush();
    const stored = this.turns.insert(this.sessionId, turn, content);
    this.emit('turn:start', turnStart(turn));
    return stored;
  }

  /** A turn stored and sent whole: one insert, turn:start and turn:end (e.g. the user's message). */
  async add(turn: Turn, content: unknown) {
    this.flush();
    await this.turns.insert(this.sessionId, turn, content);
    this.emit('turn:start', turnStart(turn));
    this.emit('turn:end', turnEnd(turn));
  }

  /** Send a run's first events, stored by its claim: the same events `add` would send, not written again. */
  opened(o: RunOpening) {
    this.flush();
    for (const ev of openingEvents(o)) this.log.emit(this.sessionId, ev.name, ev.data, { stored: true });
  }

  patch(turn: Turn, p: Patch) {
    if (!DELTAS.has(p.patch_type)) {
      this.flush();
      applyPatch(turn, p);
      this.emit('turn:patch', { turn_id: turn.turn_id, patch_type: p.patch_type, data: p.data });
      return;
    }
    const text = (p.data as { text_delta: string }).text_delta;
    if (this.held && (this.held.turn !== turn || this.held.type !== p.patch_type)) this.flush();
    if (this.held) this.held.text += text;
    else {
      this.held = { turn, type: p.patch_type, text };
      this.tick = setImmediate(() => {
        try {
          this.flush();
        } catch {
          // The run ended meanwhile (its end flushes first): nothing left to send.
        }
      });
    }
  }

  /** Send the held text deltas now. */
  flush() {
    const h = this.held;
    if (!h) return;
    this.held = null;
    if (this.tick) clearImmediate(this.tick);
    this.tick = null;
    // A long text goes out in pieces: no one event (its encoding, its frame, its share of a write
    // batch) is large enough to stall the event loop or fill a slow client's buffer at once.
    for (const text of pieces(h.text, MAX_DELTA_CHARS)) {
      const p = { patch_type: h.type, data: { text_delta: text } } as Patch;
      applyPatch(h.turn, p);
      this.log.emit(this.sessionId, 'turn:patch', { turn_id: h.turn.turn_id, patch_type: h.type, data: p.data });
    }
  }

  async end(turn: Turn) {
    this.flush();
    await this.turns.update(turn);
    this.emit('turn:end', { turn_id: turn.turn_id, status: turn.status, turn: structuredClone(turn) });
  }
}

/** A new turn, empty (a run's turns come from RunState.newTurn; a run's opening is made before its claim). */
export function newTurn(o: { role: Turn['role']; loopId: string; parent: string | null; status: Turn['status']; sequence: number; model: string; contextWindow: number }): Turn {
  return {
    id: newId('entry'),
    sequence: o.sequence,
    turn_id: newId('turn'),
    loop_id: o.loopId,
    kind: 'message',
    role: o.role,
    status: o.status,
    blocks: [],
    tool_calls: [],
    model: o.model,
    usage: { input_tokens: 0, output_tokens: 0 },
    duration_ms: 0,
    started_at: new Date().toISOString(),
    context_window: o.contextWindow,
    memory_refs: null,
    parent_fork_tool_call_id: o.parent,
    ...COMPACTION_FIELDS,
  };
}

export interface RunIdentity {
  sessionId: string;
  userId: string;
  model: string;
  /** Aborted by chat:stop and shutdown. */
  signal: AbortSignal;
  /** `sequence` of the run's first new turn. */
  sequence: number;
  /** The session's memory_enabled as the claim read it (tool providers read it from the run). */
  memoryEnabled?: boolean;
  /** The session's session_setup as the claim read it (a role's tools are filtered by it). */
  setup?: Record<string, unknown> | null;
  /** What started the run (default a person's message) and whether anyone is there to answer. */
  origin?: RunOrigin;
  /** The run's id when it has one already (its claim recorded it). */
  runId?: string;
  unattended?: boolean;
}

/** The state one run (one chat:send) shares across its loops and sub-agents; writes go through its journal. */
export class RunState {
  readonly live = new Map<string, Turn>();
  modelCalls = 0;
  /** Why the run was aborted when it failed from outside its body (its events could not be stored). */
  failure: unknown = null;
  readonly sessionId: string;
  readonly userId: string;
  readonly model: string;
  readonly signal: AbortSignal;
  readonly memoryEnabled?: boolean;
  readonly setup?: Record<string, unknown> | null;
  /** What hooks are told about this run. */
  readonly info: RunInfo;
  private sequence: number;

  constructor(
    id: RunIdentity,
    readonly config: Config,
    private readonly journal: TurnJournal,
  ) {
    ({ sessionId: this.sessionId, userId: this.userId, model: this.model, signal: this.signal, sequence: this.sequence, memoryEnabled: this.memoryEnabled, setup: this.setup } = id);
    this.info = {
      runId: id.runId ?? newId('run'),
      userId: id.userId,
      sessionId: id.sessionId,
      model: id.model,
      origin: id.origin ?? 'chat',
      unattended: id.unattended ?? false,
      signal: id.signal,
      notice: (code, message, data) => void this.journal.emit('system:notice', { ...data, code, message }),
    };
  }

  emit<N extends ServerEventName>(name: N, data: ServerEventData<N>) {
    return this.journal.emit(name, data);
  }

  newTurn(role: Turn['role'], loopId: string, parent: string | null, status: Turn['status']): Turn {
    return newTurn({ role, loopId, parent, status, sequence: this.sequence++, model: this.model, contextWindow: contextWindowOf(this.config.model, this.model) });
  }

  async startTurn(turn: Turn, content: unknown = null) {
    this.live.set(turn.id, turn);
    await this.journal.start(turn, content);
  }

  /** A streamed turn: sent now, stored meanwhile (the promise); end it only once that settled. */
  openTurn(turn: Turn): Promise<void> {
    this.live.set(turn.id, turn);
    return this.journal.open(turn, null);
  }

  patch(turn: Turn, p: Patch) {
    this.journal.patch(turn, p);
  }

  /** Send held text deltas (before an event that bypasses the journal, e.g. chat:end). */
  flush() {
    this.journal.flush();
  }

  /** Store and send a turn that is complete as it starts (the user's message): one insert. */
  async addTurn(turn: Turn, content: unknown = null) {
    await this.journal.add(turn, content);
  }

  /**
   * A run for a new message whose claim stored `o` (its user turn and first events): the turn takes
   * the sequence and model the claim gave it, and the events are sent.
   */
  opened(o: RunOpening, mode: string) {
    o.turn.sequence = this.sequence++;
    o.turn.model = this.model;
    o.turn.context_window = contextWindowOf(this.config.model, this.model);
    o.mode ??= mode;
    this.journal.opened(o);
  }

  async endTurn(turn: Turn, status: Turn['status'], startedMs?: number) {
    turn.status = status;
    if (startedMs !== undefined) turn.duration_ms = Math.round(performance.now() - startedMs);
    await this.journal.end(turn);
    this.live.delete(turn.id);
  }
}
