import { errField, type Logger } from '../../platform/lib/logger.js';
import type { SessionWorkspace, Tool } from '../tools/types.js';

/**
 * The seams of the run engine that other capabilities plug into (tool policy, usage and budgets,
 * metrics and traces) without the loop knowing them. Two kinds:
 * - events (`on` / `emit`): many listeners, told after the fact; a listener's error is logged and
 *   never reaches the run; `emit` answers a promise that settles when every listener has (callers
 *   on a hot path do not await it);
 * - gates (`gate` / `ask`): asked before something happens; each may answer a decision, the
 *   strictest wins (a `stop` or `deny` over an `ask`), no answer means go on.
 * With no listener for a name, emitting or asking costs one map lookup.
 */

/** Who a run is for and how it was started: what every hook payload carries. */
export interface RunInfo {
  runId: string;
  userId: string;
  sessionId: string;
  /** The model the run asked for (a model call's payload names the one it used). */
  model: string;
  /** What started it: a person's message, an answer to a question, or an unattended start. */
  origin: RunOrigin;
  /** Nobody is there to answer (CONTRACT 15): approvals follow the install's `unattended`. */
  unattended: boolean;
  /** Aborted by chat:stop and shutdown. */
  signal: AbortSignal;
  /** Tell the session's clients something in passing: `system:notice {code, message, ...data}` (e.g. BUDGET_WARNING). */
  notice(code: string, message: string, data?: Record<string, unknown>): void;
}

export type RunOrigin = 'chat' | 'answer' | 'headless' | 'scheduled' | 'task' | 'replay' | 'compaction';

/** Runs nobody watches to answer (CONTRACT 15): headless, scheduled, task runs, autonomous replays. */
export function isUnattended(origin: RunOrigin): boolean {
  return origin === 'headless' || origin === 'scheduled' || origin === 'task' || origin === 'replay';
}

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface HookEvents {
  'run.started': { run: RunInfo };
  /** Also told by the node that closes a run whose own node died (lease recovery). */
  'run.ended': { run: RunInfo; status: 'completed' | 'failed' | 'interrupted'; finish_reason: string; error: { code: string; message: string } | null };
  /** After each model call of a run (any loop), whatever its outcome. */
  'model.call': {
    run: RunInfo;
    loopId: string;
    turnId: string;
    model: string;
    outcome: 'ok' | 'error' | 'aborted';
    /** What the call was for: a turn of the loop (default), or a compaction's summary. */
    purpose?: 'turn' | 'compaction';
    usage: TokenUsage;
    startedAt: Date;
    durationMs: number;
    /** From the request to the first delta; null when none came. */
    ttftMs: number | null;
    error?: string;
    /** Prompt tokens the provider served from its cache (part of usage.input_tokens). */
    cachedInputTokens: number;
    /** The counts are our tokenizer's: the provider reported none. */
    estimated: boolean;
    /** Requests the call took, retries and fallbacks included (the router's). */
    attempts: number;
    /** The model asked for, when a fallback answered (`model` is the one that did). */
    fallbackFrom?: string;
  };
  /** A model call's usage as recorded, with its cost from the price table (usage module; for metrics). */
  'model.usage': { run: RunInfo; model: string; input_tokens: number; output_tokens: number; cached_input_tokens: number; cost: number | null; estimated: boolean };
  /** After each tool call that was offered to run (denied and paused ones included). */
  'tool.call': { run: RunInfo; loopId: string; callId: string; tool: string; status: 'done' | 'error' | 'paused' | 'denied'; durationMs: number };
  /** After the session's row is deleted, before its folder is removed. */
  'session.deleted': { userId: string; sessionId: string };
  /** Sharing turned off: share links must go. */
  'session.unshared': { userId: string; sessionId: string };
}

/** A gate's answers: nothing (go on) or one of these. */
export type ModelGateDecision = { action: 'stop'; code: string; message: string; finish_reason: string };
export type ToolGateDecision =
  | { action: 'deny'; message: string }
  /** Pause the call for a person's answer; `question` becomes the call's pending_question_ref. */
  | { action: 'ask'; question: Record<string, unknown> };

/** A run refused before it starts: the chat:send acks this code (e.g. BUDGET_EXCEEDED). */
export type RunGateDecision = { action: 'refuse'; code: string; message: string };

export interface HookGates {
  /** Before a chat:send starts a run, after its input was validated (budgets). */
  'run.before': { payload: { userId: string; sessionId: string; origin: RunOrigin }; decision: RunGateDecision };
  /** Before each model call (budgets). */
  'model.before': { payload: { run: RunInfo; loopId: string; model: string }; decision: ModelGateDecision };
  /** Before a tool call executes, after its arguments parsed and validated (policy). */
  'tool.before': {
    payload: { run: RunInfo; loopId: string; callId: string; tool: Tool; args: Record<string, unknown>; workspace: SessionWorkspace };
    decision: ToolGateDecision;
  };
}

type Listener<T> = (payload: T) => unknown;
type AnyFn = (payload: never) => unknown;
type Gate<K extends keyof HookGates> = (payload: HookGates[K]['payload']) => HookGates[K]['decision'] | undefined | Promise<HookGates[K]['decision'] | undefined>;

const STRICTNESS: Record<string, number> = { stop: 2, deny: 2, refuse: 2, ask: 1 };

export class Hooks {
  private readonly listeners = new Map<string, AnyFn[]>();
  private readonly gates = new Map<string, AnyFn[]>();
  /** Listener work not settled yet (shutdown waits for it before the database closes). */
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(private readonly logger: Logger) {}

  /** Listen to an event; answers the function that stops listening. */
  on<K extends keyof HookEvents>(name: K, fn: Listener<HookEvents[K]>): () => void {
    return add(this.listeners, name, fn as AnyFn);
  }

  /** Tell every listener; never throws. Settles when every listener has settled. */
  emit<K extends keyof HookEvents>(name: K, payload: HookEvents[K]): Promise<void> {
    const fns = this.listeners.get(name);
    if (!fns?.length) return Promise.resolve();
    const waits: Promise<unknown>[] = [];
    for (const fn of fns) {
      try {
        const r = (fn as unknown as Listener<HookEvents[K]>)(payload);
        if (r instanceof Promise) waits.push(r.catch((e) => this.failed(name, e)));
      } catch (e) {
        this.failed(name, e);
      }
    }
    if (!waits.length) return Promise.resolve();
    const all = Promise.all(waits).then(() => {});
    this.inflight.add(all);
    void all.finally(() => this.inflight.delete(all));
    return all;
  }

  /** Settles when every listener told so far has settled (at shutdown, after the runs ended). */
  async settled(): Promise<void> {
    while (this.inflight.size) await Promise.all(this.inflight);
  }

  /** Add a gate; answers the function that removes it. */
  gate<K extends keyof HookGates>(name: K, fn: Gate<K>): () => void {
    return add(this.gates, name, fn as AnyFn);
  }

  hasGate(name: keyof HookGates): boolean {
    return !!this.gates.get(name)?.length;
  }

  /**
   * Ask every gate in the order they were added; the strictest decision wins, the first of equals.
   * A gate that throws stops what it guards (a policy that cannot decide must not allow).
   */
  async ask<K extends keyof HookGates>(name: K, payload: HookGates[K]['payload']): Promise<HookGates[K]['decision'] | undefined> {
    const fns = this.gates.get(name);
    if (!fns?.length) return undefined;
    let best: HookGates[K]['decision'] | undefined;
    for (const fn of fns) {
      const d = await (fn as unknown as Gate<K>)(payload);
      if (d && (!best || STRICTNESS[d.action] > STRICTNESS[best.action])) best = d;
      if (best && STRICTNESS[best.action] === 2) break;
    }
    return best;
  }

  private failed(name: string, e: unknown) {
    this.logger.error({ ...errField(e), hook: name }, 'a hook listener failed');
  }
}

function add<T>(map: Map<string, T[]>, name: string, fn: T): () => void {
  const list = map.get(name) ?? [];
  list.push(fn);
  map.set(name, list);
  return () => {
    const i = list.indexOf(fn);
    if (i >= 0) list.splice(i, 1);
  };
}
