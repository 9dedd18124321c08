import { createHash } from 'node:crypto';
import type { HookContribution } from '../../core/engine/hooks.js';
import type { RunInfo } from '../../core/engine/run-info.js';
import type { Config } from '../../platform/config/index.js';
import { errField, type Logger } from '../../platform/lib/logger.js';

export type LimitKind = 'seconds' | 'tool_calls' | 'loop';
type Limits = Config['runLimits'];

/**
 * A session role's ceilings that replace the install's for its runs (a solution role's
 * `run_limits`, docs/run-limits.md); null or an omitted one: the install's.
 */
export type RoleLimits = (sessionId: string) => Promise<{ max_seconds?: number; max_tool_calls?: number; loop_repeats?: number } | null>;

/** Where a run's ceiling came from: named in the message that ends it. */
type Source = 'install' | 'role';

/** Why a run is to end: set when a ceiling is passed, acted on at the run's next model call. */
type Tripped = ({ limit: 'seconds' | 'tool_calls'; max: number; value: number } | { limit: 'loop'; tool_name: string; repeats: number }) & { from: Source };

/** What is counted for a run; kept over a pause so an answered question's run goes on counting. */
interface Counted {
  runId: string;
  /** The run's ceilings: the install's, replaced by its role's once `ready` settled. */
  limits: Limits;
  /** Which of them the role set. */
  fromRole: Set<keyof Limits>;
  /** Settles when the role's ceilings are read (the gates wait for it). */
  ready: Promise<void> | null;
  /** Active milliseconds of earlier parts of the run (before it paused for an answer). */
  activeMs: number;
  /** When the current part started (performance.now()); null while paused. */
  since: number | null;
  /** Tool calls asked to run (distinct call ids: a mid-call recheck asks again with the same id). */
  calls: Set<string>;
  /** Per loop (root, sub-agents): the last call's key and how many times in a row it came. */
  streaks: Map<string, { key: string; n: number }>;
  tripped: Tripped | null;
  /** The notice, metric and log line are out: every later model call of the run (a sub-agent's, then the root's) stops too. */
  told: boolean;
}

/** The finish reasons a pause ends a run with: the run goes on when the answer comes. */
const PAUSES = new Set(['tool_question', 'tool_approval']);
/** Runs that continue a paused one (an answer keeps a scheduled or task run's origin). */
const FRESH = new Set(['chat', 'headless']);

/**
 * The same object whatever order its keys came in: the model may repeat a call with its arguments
 * reordered. (Four lines do it: JSON.stringify's replacer sees every object before it is written.)
 */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x,
  );
}

/**
 * Ceilings on a run and its loop detector, as contributions to the run hooks (docs/run-limits.md):
 * - `tool.before`: a call past `maxToolCalls`, or made past `maxSeconds`, is denied and marks the run;
 * - `tool.call`: the same tool, arguments and result `loopRepeats` times in a row in one loop marks it;
 * - `model.before`: a marked run (or one past `maxSeconds`) is stopped with `finish_reason` `limit` or
 *   `loop`, after a `system:notice` (RUN_LIMIT, LOOP_DETECTED), a metric and a log line;
 * - `run.started` / `run.ended`: the clock runs while the run does; the wait for an answer does not count.
 */
export class RunLimits {
  private readonly runs = new Map<string, Counted>();

  constructor(
    private readonly limits: Limits,
    private readonly logger: Logger,
    private readonly count: (limit: LimitKind) => void,
    private readonly now: () => number = () => performance.now(),
    private readonly roleLimits: RoleLimits | null = null,
  ) {}

  /** Its contributions to the run hooks, by name (module.ts). */
  hooks(): HookContribution[] {
    return [
      { on: 'run.started', name: 'run-limits.clock', run: ({ run }) => this.started(run) },
      { on: 'run.ended', name: 'run-limits.clock', run: ({ run, finish_reason }) => this.ended(run, finish_reason) },
      { on: 'session.deleted', name: 'run-limits.forget', run: ({ sessionId }) => void this.runs.delete(sessionId) },
      { on: 'tool.call', name: 'run-limits.loop', run: (c) => this.toolCall(c.run, c.loopId, c.tool, c.status, c.args, c.result) },
      { on: 'tool.before', name: 'run-limits.ceilings', run: ({ run, callId }) => this.beforeTool(run, callId) },
      { on: 'model.before', name: 'run-limits.stop', run: ({ run }) => this.beforeModel(run) },
    ];
  }

  /** Sessions counted (for tests: none left after runs end). */
  get size(): number {
    return this.runs.size;
  }

  private started(run: RunInfo): void {
    const prev = this.runs.get(run.sessionId);
    if (prev && prev.since === null && !FRESH.has(run.origin)) {
      prev.runId = run.runId;
      prev.since = this.now();
      return;
    }
    const c: Counted = { runId: run.runId, limits: this.limits, fromRole: new Set(), ready: null, activeMs: 0, since: this.now(), calls: new Set(), streaks: new Map(), tripped: null, told: false };
    this.runs.set(run.sessionId, c);
    if (this.roleLimits) c.ready = this.withRole(c, this.roleLimits, run.sessionId);
  }

  /** Read the session role's ceilings into the run's; a failed read keeps the install's. */
  private async withRole(c: Counted, read: RoleLimits, sessionId: string): Promise<void> {
    try {
      const r = await read(sessionId);
      if (!r) return;
      const set: Partial<Limits> = {};
      if (r.max_seconds !== undefined) set.maxSeconds = r.max_seconds;
      if (r.max_tool_calls !== undefined) set.maxToolCalls = r.max_tool_calls;
      if (r.loop_repeats !== undefined) set.loopRepeats = r.loop_repeats;
      c.limits = { ...this.limits, ...set };
      c.fromRole = new Set(Object.keys(set) as (keyof Limits)[]);
    } catch (e) {
      this.logger.warn({ ...errField(e), session_id: sessionId }, "could not read the role's run limits; the install's apply");
    } finally {
      c.ready = null;
    }
  }

  private from(c: Counted, k: keyof Limits): Source {
    return c.fromRole.has(k) ? 'role' : 'install';
  }

  private ended(run: RunInfo, finishReason: string): void {
    const c = this.runs.get(run.sessionId);
    if (!c || c.runId !== run.runId) return;
    if (PAUSES.has(finishReason) && c.since !== null) {
      c.activeMs += this.now() - c.since;
      c.since = null;
    } else this.runs.delete(run.sessionId);
  }

  private of(run: RunInfo): Counted | undefined {
    const c = this.runs.get(run.sessionId);
    return c && c.runId === run.runId ? c : undefined;
  }

  private seconds(c: Counted): number {
    return (c.activeMs + (c.since === null ? 0 : this.now() - c.since)) / 1000;
  }

  /** Past the wall clock: marked (the value in whole seconds, as the setting is). */
  private checkClock(c: Counted): void {
    const s = this.seconds(c);
    if (!c.tripped && s > c.limits.maxSeconds) c.tripped = { limit: 'seconds', max: c.limits.maxSeconds, value: Math.floor(s), from: this.from(c, 'maxSeconds') };
  }

  private async beforeTool(run: RunInfo, callId: string) {
    const c = this.of(run);
    if (!c) return undefined;
    if (c.ready) await c.ready;
    c.calls.add(callId);
    this.checkClock(c);
    if (!c.tripped && c.calls.size > c.limits.maxToolCalls) c.tripped = { limit: 'tool_calls', max: c.limits.maxToolCalls, value: c.calls.size, from: this.from(c, 'maxToolCalls') };
    if (!c.tripped) return undefined;
    return { action: 'deny' as const, message: `Error: this run reached its limit (${describe(c.tripped)}), so this call did not run.` };
  }

  private toolCall(run: RunInfo, loopId: string, tool: string, status: string, args: unknown, result: string | null): void {
    const c = this.of(run);
    if (!c || c.tripped) return;
    if ((status !== 'done' && status !== 'error') || result === null) {
      c.streaks.delete(loopId);
      return;
    }
    const key = createHash('sha256')
      .update(tool)
      .update('\0')
      .update(canonical(args) ?? '')
      .update('\0')
      .update(status)
      .update('\0')
      .update(result)
      .digest('base64');
    const s = c.streaks.get(loopId);
    const n = s?.key === key ? s.n + 1 : 1;
    c.streaks.set(loopId, { key, n });
    if (n >= c.limits.loopRepeats) c.tripped = { limit: 'loop', tool_name: tool, repeats: n, from: this.from(c, 'loopRepeats') };
  }

  private async beforeModel(run: RunInfo) {
    const c = this.of(run);
    if (!c) return undefined;
    if (c.ready) await c.ready;
    this.checkClock(c);
    const t = c.tripped;
    if (!t) return undefined;
    const message = `The run was ended: ${describe(t)}.`;
    const code = t.limit === 'loop' ? 'LOOP_DETECTED' : 'RUN_LIMIT';
    if (!c.told) {
      c.told = true;
      const who = { session_id: run.sessionId, user_id: run.userId, run_id: run.runId };
      this.count(t.limit);
      if (t.limit === 'loop') {
        this.logger.warn({ ...who, tool_name: t.tool_name, repeats: t.repeats }, 'run ended: loop detected');
        run.notice(code, message, { session_id: run.sessionId, tool_name: t.tool_name });
      } else {
        this.logger.warn({ ...who, limit: t.limit, max: t.max, value: t.value }, 'run ended: limit reached');
        run.notice(code, message, { session_id: run.sessionId, limit: t.limit, max: t.max, value: t.value });
      }
    }
    return { action: 'stop' as const, code, message, finish_reason: t.limit === 'loop' ? 'loop' : 'limit' };
  }
}

function describe(t: Tripped): string {
  if (t.limit === 'loop') return `${t.tool_name} was called ${t.repeats} times in a row with the same arguments and the same result`;
  if (t.limit === 'seconds') return `it ran ${t.value} s, past its ${t.max} s (${t.from === 'role' ? "the role's run_limits.max_seconds" : 'AGENTSVC_RUN_MAX_SECONDS'})`;
  return `${t.value} tool calls, past its ${t.max} (${t.from === 'role' ? "the role's run_limits.max_tool_calls" : 'AGENTSVC_RUN_MAX_TOOL_CALLS'})`;
}
