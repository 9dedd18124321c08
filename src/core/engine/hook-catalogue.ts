/**
 * The run-hook catalogue: every point where a feature joins the run engine and the sessions, its
 * kind and its payload. Core calls the points; features contribute to them from their module.ts
 * (`hooks: [...]`), by name and in the order they declare (`before` / `after`), so the core knows
 * no feature. docs/architecture.md is the guide for feature and plugin authors.
 */
import type { EventBus } from '../../platform/infra/event-bus.js';
import type { EgressPort } from '../../../runners/egress.js';
import type { Runner } from '../../../runners/types.js';
import type { SessionSandbox, Tool } from '../tools/types.js';
import type { ModelMessage } from '../models/port.js';
import type { PendingApproval, ToolCall, Turn } from '../conversation/turns.js';
import type { CreateSessionInput } from '../sessions/schemas.js';
import type { SessionPlan } from '../sessions/service.js';
import type { ApprovalChoice } from './approval.js';
import type { RunState } from './run-state.js';
import type { RunInfo, RunOrigin, TokenUsage } from './run-info.js';

/** Events: told after the fact to every listener; a listener's error is logged, never reaches the run. */
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
    /** Whose key paid: the user's own (`model.credentials`) or the install's (absent: the install's). */
    credential?: 'personal' | 'install';
  };
  /** A model call's usage as recorded, with its cost from the price table (usage module; for metrics). */
  'model.usage': { run: RunInfo; model: string; input_tokens: number; output_tokens: number; cached_input_tokens: number; cost: number | null; estimated: boolean };
  /** A budget passed 80% with a run's call, once per period (usage module; webhooks send `budget.warning`). */
  'budget.warning': { run: RunInfo; message: string; budget: Record<string, unknown> };
  /**
   * After each tool call that was offered to run (denied and paused ones included), with its parsed
   * arguments and, for a call that ran (`done`/`error`), the result the model sees (else null): the
   * loop detector compares them (src/features/run-limits).
   */
  'tool.call': { run: RunInfo; loopId: string; callId: string; tool: string; status: 'done' | 'error' | 'paused' | 'denied'; durationMs: number; args: unknown; result: string | null };
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

/** A run refused before it starts: the chat:send acks this code (e.g. BUDGET_EXCEEDED); `status` is REST's (default 429). */
export type RunGateDecision = { action: 'refuse'; code: string; message: string; status?: number };

/** Gates: asked before something happens; the strictest answer wins, no answer means go on. */
export interface HookGates {
  /** Before a chat:send starts a run, after its input was validated (budgets). */
  'run.before': { payload: { userId: string; sessionId: string; origin: RunOrigin }; decision: RunGateDecision };
  /** Before each model call (budgets). */
  'model.before': { payload: { run: RunInfo; loopId: string; model: string }; decision: ModelGateDecision };
  /** Before a tool call executes, after its arguments parsed and validated (policy). */
  'tool.before': {
    payload: { run: RunInfo; loopId: string; callId: string; tool: Tool; args: Record<string, unknown>; workspace: SessionSandbox };
    decision: ToolGateDecision;
  };
}

/** What-if: rerun a past step with another message (time travel). */
export interface WhatIf {
  from_step: number;
  quotes: string[];
  deprecate_entry_ids: string[];
}

/**
 * Steps: awaited in order; the first contribution that answers (anything but undefined or null)
 * ends the step with its answer. What a step's contribution throws reaches the caller.
 */
export interface HookSteps {
  /**
   * A new message's run, claimed, its user turn stored, before the prompt is built and the model is
   * called (checkpoint, memory recall). Work that must be done before the run's first tool executes
   * and before the run ends, but need not hold up the model call, goes to `defer`.
   */
  'run.opening': {
    payload: { run: RunInfo; turn: Turn; text: string; recall: boolean; defer(work: Promise<unknown>): void };
    answer: undefined;
  };
  /** Before each model call of the root loop: a history to call the model with instead (auto-compaction). */
  'model.prepare': { payload: { run: RunState; messages: ModelMessage[] }; answer: ModelMessage[] };
  /**
   * Before each model call of any loop, after `model.prepare`: the tools to offer in this call
   * instead of the loop's own (tool search). The loop offers, validates and runs exactly these for
   * the calls this model call makes; a sub-agent still gets the loop's own tools.
   */
  'model.tools': { payload: { run: RunState; loopId: string; messages: ModelMessage[]; tools: Tool[] }; answer: Tool[] };
  /**
   * Outside any run (context statistics): the tools the session's next root model call would offer
   * instead of these, chosen as `model.tools` chooses, changing nothing. No answer: these.
   */
  'model.tools.preview': { payload: { sessionId: string; model: string; messages: ModelMessage[]; tools: Tool[] }; answer: Tool[] };
  /**
   * Before each model call of a run (any loop): API keys by model entry id to call `model` and its
   * fallbacks with instead of the install's (a user's personal keys); no answer: the install's.
   */
  'model.credentials': { payload: { run: RunInfo; model: string }; answer: ReadonlyMap<string, string> };
  /** A person answered a policy approval, before the paused run goes on (audit, session rules). */
  'approval.answered': { payload: { userId: string; sessionId: string; call: ToolCall; ref: PendingApproval; choice: ApprovalChoice }; answer: undefined };
  /** A chat:send with `whatif`, before anything is stored: throws 422 for a step out of range or unknown entry ids. */
  'whatif.check': { payload: { userId: string; sessionId: string; whatif: WhatIf; hasMessage: boolean }; answer: undefined };
  /** The what-if's run, claimed: start the new branch (files restored); answers the original text of the step rerun. */
  'whatif.fork': { payload: { userId: string; sessionId: string; whatif: WhatIf }; answer: { original: string } };
  /** A session created with solution_id/biz_role_id: the role's plan, or an error (422/403). */
  'session.plan': { payload: { userId: string; input: CreateSessionInput }; answer: SessionPlan };
  /** Whether the user may name this team workspace in a session (true: its member). No answer: no. */
  'session.access': { payload: { userId: string; workspaceId: string }; answer: boolean };
  /** The members of a team workspace when the user is one of them (they read its members' sessions). No answer: not a member. */
  'session.readers': { payload: { userId: string; workspaceId: string }; answer: string[] };
}

/**
 * A row stored by a run's claim, in its statement (RunStore.claim): an insert whose rows select from
 * `src`, the session's row as claimed (`id`, `active_branch`, `next_sequence`: the sequence the
 * run's user turn takes). The SQL is its table owner's; nothing is stored when the claim fails.
 */
export interface ClaimWrite {
  sql: string;
  params: unknown[];
}

/** What a run's chat:end carries besides its status (usage). */
export interface RunEndFields {
  usage?: { input_tokens: number; output_tokens: number; cost: number | null };
}

/**
 * Fields: asked synchronously, every contribution in order, their answers merged (a later one's
 * field over an earlier's). A contribution that throws is logged and left out.
 */
export interface HookFields {
  /**
   * A new message's run, just before its claim: rows the claim's own statement stores (a run start
   * is one round trip), by contribution name. Only what is known without a wait (e.g. the checkpoint
   * of a session folder that is empty); whatever must read more is run.opening's.
   */
  'run.claim': { payload: { userId: string; sessionId: string; turn: Turn; text: string }; answer: Record<string, ClaimWrite> };
  /** A run's end, before its chat:end is stored: what chat:end carries besides its status. */
  'run.ending': { payload: { run: RunInfo }; answer: RunEndFields };
}

/**
 * Wraps: a port handed through each contribution in order at its module's start (the first given
 * the port, each next given what the one before answered): metrics and traces of the runner and the
 * event bus. A contribution must be registered before the port's module starts: its module says so
 * with `before` (src/platform/lib/modules.ts).
 */
export interface HookWraps {
  /** The runner of the users' computers (src/core/tools/module.ts). */
  runner: Runner;
  /** The bus that carries session events between nodes (src/core/events/module.ts). */
  'events.bus': EventBus;
  /**
   * The egress proxy the runner sends its computers' network through (features/egress, before the
   * runner starts); none: a runner with network starts its own, which applies the address rule only.
   */
  egress: EgressPort | undefined;
}

export type HookKind = 'event' | 'gate' | 'step' | 'fields' | 'wrap';

/** Every point of the catalogue and its kind: a contribution to a point not listed here fails at start. */
export const HOOK_POINTS: Readonly<
  Record<keyof HookEvents, 'event'> & Record<keyof HookGates, 'gate'> & Record<keyof HookSteps, 'step'> & Record<keyof HookFields, 'fields'> & Record<keyof HookWraps, 'wrap'>
> = {
  'run.before': 'gate',
  'run.started': 'event',
  'run.claim': 'fields',
  'run.opening': 'step',
  'whatif.check': 'step',
  'whatif.fork': 'step',
  'approval.answered': 'step',
  'model.prepare': 'step',
  'model.tools': 'step',
  'model.tools.preview': 'step',
  'model.before': 'gate',
  'model.credentials': 'step',
  'model.call': 'event',
  'model.usage': 'event',
  'budget.warning': 'event',
  'tool.before': 'gate',
  'tool.call': 'event',
  'run.ending': 'fields',
  'run.ended': 'event',
  'session.plan': 'step',
  'session.access': 'step',
  'session.readers': 'step',
  'session.deleted': 'event',
  'session.unshared': 'event',
  runner: 'wrap',
  'events.bus': 'wrap',
  egress: 'wrap',
};
