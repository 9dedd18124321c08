import { applyPatch, COMPACTION_FIELDS, hasOpenCalls, type Patch, type PendingApproval, type ToolCall, type Turn } from '../../src/core/conversation/turns.js';
import { isSessionEvent, type Payload, type SessionEvent, type SessionEventName } from '../../src/core/events/protocol.js';
import { plainError, sentence } from './errors.js';

/**
 * One session's conversation as the console shows it, built from the event stream with the
 * service's own reducer (src/core/conversation/turns.ts, the one that builds the stored projection), so what is
 * drawn and what `GET .../messages` answers are the same by construction.
 *
 * Loading: subscribe with `since_seq: 0`, which replays every event still kept, then live ones
 * (or `session:resync` with the turn list when they are too old). That gives an exact position
 * (`lastSeq`). The replay also holds turns of branches left by a rewind, so once it is in, the
 * turn list of `GET .../messages` says which turns are on the active branch: every turn that
 * started before the subscription was acknowledged is stored by then, so a turn of the replay
 * missing from that list is not on the branch; turns started after the ack are new and are.
 * After a dropped connection, subscribing again with `since_seq: lastSeq` sends exactly what was
 * missed; a seq at or below `lastSeq` is a repeat and is dropped.
 */

/** A `system:notice` shown above the composer (e.g. BUDGET_WARNING: a budget passed 80%). */
export interface ShownNotice {
  seq: number;
  code: string;
  message: string;
}

/** A tool call the policy holds for a person's decision (docs/policy.md). */
export interface Approval {
  call: ToolCall;
  tool_name: string;
  arguments: unknown;
  rule: unknown;
  source: string | null;
  options: string[];
}

const APPROVAL_OPTIONS = ['Allow once', 'Allow for this session', 'Deny'];
const approvalRef = (c: ToolCall): PendingApproval | null =>
  c.pending_question_ref && typeof c.pending_question_ref === 'object' && c.pending_question_ref.type === 'approval' ? c.pending_question_ref : null;

export interface Question {
  call: ToolCall;
  questions: { question: string; header?: string; options: { label: string; description?: string }[]; multiSelect?: boolean }[];
}

function skeleton(p: Payload<'turn:start'>): Turn {
  return {
    id: '',
    sequence: 0,
    turn_id: p.turn_id,
    loop_id: 'root',
    kind: 'message',
    role: p.role as Turn['role'],
    status: (p.status || 'streaming') as Turn['status'],
    blocks: [],
    tool_calls: [],
    model: '',
    usage: { input_tokens: 0, output_tokens: 0 },
    duration_ms: 0,
    started_at: new Date().toISOString(),
    context_window: 0,
    memory_refs: null,
    parent_fork_tool_call_id: p.parent_fork_tool_call_id ?? null,
    ...COMPACTION_FIELDS,
  };
}

export class ChatModel {
  turns = new Map<string, Turn>();
  /** Turn ids in the order they started (sub-agent turns too; the view nests them). */
  order: string[] = [];
  private readonly startedAt = new Map<string, number>();
  lastSeq = 0;
  /** A run is under way (chat:start seen, chat:end not yet). */
  running = false;
  /** The last system:error of this session, as a sentence (errors.ts). */
  error: string | null = null;
  /** Progress notes of long tools (update_tool_call `progress`), by call id. */
  progress = new Map<string, string>();
  /** Events applied, for the view to know it must draw again. */
  version = 0;

  /**
   * Set when the service ended the subscription (`session:closed`: the session was deleted, or this
   * reader is no longer in its team workspace): why, as a sentence. Nothing more of it arrives.
   */
  closed: string | null = null;

  /** `system:notice`s that arrived live, oldest first, until dismissed. */
  notices: ShownNotice[] = [];
  /**
   * Events from here on are live: set once the subscription is acknowledged. The replay before it
   * is history: its notices were for then (the terminal client does not repeat them either).
   */
  live = false;

  /**
   * What the console does with each server event of a session: one entry per event of the
   * catalogue, so a new event is a compile error here until it is given one
   * (test/architecture/client-events.test.ts compares the keys with the catalogue too).
   */
  static readonly handlers: { [N in SessionEventName]: (m: ChatModel, p: Payload<N>) => void } = {
    'session:resync': (m, p) => {
      m.turns = new Map(p.turns.map((t) => [t.turn_id, t as Turn]));
      m.order = p.turns.map((t) => t.turn_id);
      m.startedAt.clear();
      m.lastSeq = p.seq;
      m.running = p.turns.some((t) => t.status === 'streaming');
    },
    'session:closed': (m, p) => {
      m.running = false;
      m.closed = `You can no longer read this session (${p.message || p.code}): it was deleted, or you are no longer a member of its team workspace.`;
    },
    'chat:start': (m) => {
      m.running = true;
      m.error = null;
    },
    'chat:end': (m) => {
      m.running = false;
    },
    'system:error': (m, p) => {
      m.error = plainError(p.code, p.message || 'the run failed');
    },
    'system:notice': (m, p) => {
      if (m.live) m.notices.push({ seq: p.seq, code: p.code, message: sentence(p.message || p.code) });
    },
    'turn:start': (m, p) => {
      if (!m.turns.has(p.turn_id)) {
        m.turns.set(p.turn_id, skeleton(p));
        m.order.push(p.turn_id);
      }
      m.startedAt.set(p.turn_id, p.seq);
    },
    'turn:end': (m, p) => {
      const t = p.turn as Turn | undefined;
      if (t) m.turns.set(p.turn_id, t);
      else {
        const known = m.turns.get(p.turn_id);
        if (known) known.status = p.status as Turn['status'];
      }
      if (!m.order.includes(p.turn_id)) m.order.push(p.turn_id);
    },
    'turn:patch': (m, p) => {
      const t = m.turns.get(p.turn_id);
      if (!t) return;
      if (p.patch_type === 'update_tool_call' && typeof p.data.progress === 'string') m.progress.set(p.data.id, p.data.progress);
      applyPatch(t, { patch_type: p.patch_type, data: p.data } as Patch);
      // An answered question completes its paused turn (docs/sessions-and-runs.md).
      if (p.patch_type === 'tool_result' && t.status === 'paused' && !hasOpenCalls(t)) t.status = 'completed';
    },
  };

  /** Apply one server event; false when it is a repeat or not a session event. */
  apply(name: string, payload: unknown): boolean {
    if (!isSessionEvent(name)) return false;
    // The service sends what the catalogue says (its tests check a real run's events against it).
    const e = { name, payload } as SessionEvent;
    // Both are for this socket alone and carry no seq of their own.
    if (e.name !== 'session:resync' && e.name !== 'session:closed') {
      if (e.payload.seq <= this.lastSeq) return false;
      this.lastSeq = e.payload.seq;
    }
    this.version++;
    (ChatModel.handlers[e.name] as (m: ChatModel, p: SessionEvent['payload']) => void)(this, e.payload);
    return true;
  }

  dismissNotice(seq: number) {
    this.notices = this.notices.filter((n) => n.seq !== seq);
    this.version++;
  }

  /**
   * Keep the turns of the active branch: those `GET .../messages` lists (in its order; the
   * stream's copy when it has one, being at least as new), then turns started after `ackSeq`.
   */
  merge(stored: Turn[], ackSeq: number) {
    const onBranch = new Set(stored.map((t) => t.turn_id));
    const order = stored.map((t) => t.turn_id);
    for (const t of stored) if (!this.turns.has(t.turn_id)) this.turns.set(t.turn_id, t);
    for (const id of this.order) if (!onBranch.has(id) && (this.startedAt.get(id) ?? 0) > ackSeq) order.push(id);
    const keep = new Set(order);
    for (const id of [...this.turns.keys()]) if (!keep.has(id)) this.turns.delete(id);
    this.order = order;
    if (!this.running) this.running = order.some((id) => this.turns.get(id)?.status === 'streaming');
    this.version++;
  }

  /** Root turns, in order (the main chat shows turns without parent_fork_tool_call_id). */
  roots(): Turn[] {
    return this.order.map((id) => this.turns.get(id)!).filter((t) => t && !t.parent_fork_tool_call_id);
  }

  /** Turns of the sub-agent started by fork call `callId`. */
  children(callId: string): Turn[] {
    return this.order.map((id) => this.turns.get(id)!).filter((t) => t && t.parent_fork_tool_call_id === callId);
  }

  /** The question the session waits on, if any (a sub-agent's too). */
  question(): Question | null {
    for (let i = this.order.length - 1; i >= 0; i--) {
      const t = this.turns.get(this.order[i]);
      const call = t?.tool_calls.find((c) => c.status === 'awaiting_answer' && !approvalRef(c));
      if (call) {
        try {
          const args = JSON.parse(call.arguments || '{}');
          return { call, questions: Array.isArray(args.questions) ? args.questions : [] };
        } catch {
          return { call, questions: [] };
        }
      }
    }
    return null;
  }

  /** The approval the session waits on: the first held call of the newest turn that holds one (asked in order). */
  approval(): Approval | null {
    for (let i = this.order.length - 1; i >= 0; i--) {
      const call = this.turns.get(this.order[i])?.tool_calls.find((c) => c.status === 'awaiting_answer' && approvalRef(c));
      const ref = call && approvalRef(call);
      if (call && ref) {
        const options = Array.isArray(ref.options) && ref.options.every((o) => typeof o === 'string') ? (ref.options as string[]) : APPROVAL_OPTIONS;
        return { call, tool_name: String(ref.tool_name ?? call.tool_name), arguments: ref.arguments ?? call.arguments, rule: ref.rule ?? null, source: typeof ref.source === 'string' ? ref.source : null, options };
      }
    }
    return null;
  }
}
