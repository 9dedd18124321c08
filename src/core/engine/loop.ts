import type { ForkService, Tool, ToolContext } from '../tools/types.js';
import { ToolRegistry } from '../tools/registry.js';
import { newId } from '../../platform/lib/ids.js';
import type { SessionSandbox } from '../tools/types.js';
import { assistantMessages } from '../conversation/history.js';
import type { ModelMessage, ModelPort } from '../models/port.js';
import type { RunState } from './run-state.js';
import { isOpen, type Patch, type ToolCall, type Turn } from '../conversation/turns.js';
import { executeTool } from './tool-exec.js';
import type { Hooks } from './hooks.js';
import { contextWindowOf } from '../../platform/config/models.js';

/** A gate ended the run on purpose (a spent budget): chat:end says `finish_reason`, not a failure. */
export class RunStopped extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly finishReason: string,
  ) {
    super(message);
  }
}

export interface LoopSpec {
  loopId: string;
  parentCallId: string | null;
  /** Sub-agent nesting depth: 0 for the root loop. */
  depth: number;
  /** System prompt + history; the loop appends to it. */
  messages: ModelMessage[];
  tools: Tool[];
  jsonSchema?: Record<string, unknown>;
}

export type LoopOutcome = { kind: 'done'; text: string } | { kind: 'paused' } | { kind: 'max_turns'; text: string };

export interface LoopDeps {
  model: ModelPort;
  /** The run hooks: model.prepare, gates before model and tool calls, events after them (policy, budgets, usage, metrics). */
  hooks: Hooks;
  registry: ToolRegistry;
  workspace: SessionSandbox;
  env?: Record<string, string>;
  /** ctx.fork for the calls of a loop (sub-agents); absent where forking is not offered. */
  forks?: (run: RunState, deps: LoopDeps, spec: LoopSpec, call: ToolCall) => ForkService;
  /** Before each model call: list the loop's tools again when providers changed them (MCP list_changed). */
  retool?: (spec: LoopSpec) => Promise<void>;
  /** Awaited before a tool of the run executes: the run's checkpoint has recorded the files by then. */
  beforeTools?: () => Promise<void>;
}

interface PendingCall {
  id?: string;
  name: string;
  args: string;
}

function displayName(tools: Tool[], name: string) {
  return tools.find((t) => t.name === name)?.displayName ?? name;
}

/**
 * One agent loop: model call -> streamed assistant turn -> tools -> repeat, until the model answers
 * without tool calls, a question pauses it, or the run's bound on model calls is reached.
 * Throws ModelError (run fails) or the abort reason (run stopped); the turn in flight is closed
 * first, with every unfinished tool call cancelled.
 */
export async function runLoop(run: RunState, deps: LoopDeps, spec: LoopSpec): Promise<LoopOutcome> {
  let lastText = '';
  for (;;) {
    if (run.modelCalls >= run.config.model.maxCallsPerRun) return { kind: 'max_turns', text: lastText };
    // model.prepare (auto-compaction): the root loop's history replaced when the context is too full.
    if (spec.depth === 0 && deps.hooks.has('model.prepare')) {
      const compacted = await deps.hooks.call('model.prepare', { run, messages: spec.messages });
      if (compacted) spec.messages.splice(0, spec.messages.length, ...compacted);
    }
    await deps.retool?.(spec);
    // model.tools (tool search): the tools this call offers, and the only ones its calls may run.
    const offered = (spec.tools.length && (await deps.hooks.call('model.tools', { run, loopId: spec.loopId, messages: spec.messages, tools: spec.tools }))) || spec.tools;
    const stop = await deps.hooks.ask('model.before', { run: run.info, loopId: spec.loopId, model: run.model });
    if (stop) throw new RunStopped(stop.code, stop.message, stop.finish_reason);
    run.modelCalls++;
    const turn = run.newTurn('assistant', spec.loopId, spec.parentCallId, 'streaming');
    const t0 = performance.now();
    // The turn is sent now and stored while the model is called: its first delta waits for neither.
    const started = run.openTurn(turn);
    started.catch(() => {});
    try {
      const calls = await observedModelCall(run, deps, spec, turn, started, offered);
      const paused = await runTools(run, deps, spec, turn, calls, offered);
      await run.endTurn(turn, paused ? 'paused' : 'completed', t0);
      spec.messages.push(...assistantMessages(turn));
      lastText = turn.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('');
      if (paused) return { kind: 'paused' };
      if (!calls.length) return { kind: 'done', text: lastText };
    } catch (e) {
      await started.catch(() => {});
      if (run.live.has(turn.id)) await closeTurn(run, turn, run.signal.aborted && !run.failure ? 'interrupted' : 'failed', t0);
      throw e;
    }
  }
}

/** streamModel, with `model.call` told how it went (after the call: nothing on the delta path). */
async function observedModelCall(run: RunState, deps: LoopDeps, spec: LoopSpec, turn: Turn, started: Promise<void>, offered: Tool[]): Promise<PendingCall[]> {
  const startedAt = new Date();
  const t0 = performance.now();
  const first = { ms: null as number | null };
  const meta: CallMeta = { cached: 0, estimated: false, attempts: 1, credential: 'install' };
  const report = (outcome: 'ok' | 'error' | 'aborted', error?: string) =>
    void deps.hooks.emit('model.call', {
      run: run.info,
      loopId: spec.loopId,
      turnId: turn.turn_id,
      model: turn.model ?? run.model,
      outcome,
      usage: { ...turn.usage },
      startedAt,
      durationMs: performance.now() - t0,
      ttftMs: first.ms,
      error,
      cachedInputTokens: meta.cached,
      estimated: meta.estimated,
      attempts: meta.attempts,
      fallbackFrom: meta.fallbackFrom,
      credential: meta.credential,
    });
  try {
    const calls = await streamModel(run, deps, spec, turn, started, offered, () => (first.ms ??= performance.now() - t0), meta);
    report('ok');
    return calls;
  } catch (e) {
    meta.attempts = (e as { attempts?: number })?.attempts ?? meta.attempts;
    report(run.signal.aborted ? 'aborted' : 'error', (e as Error)?.message ?? String(e));
    throw e;
  }
}

/** What a model call tells beside its deltas, for `model.call`. */
interface CallMeta {
  cached: number;
  estimated: boolean;
  attempts: number;
  fallbackFrom?: string;
  credential: 'personal' | 'install';
}

/** Stream one model call into `turn`, sent already; its row is being stored (`started`): a failed insert ends the call. */
async function streamModel(run: RunState, deps: LoopDeps, spec: LoopSpec, turn: Turn, started: Promise<void>, offered: Tool[], firstDelta: () => void, meta: CallMeta): Promise<PendingCall[]> {
  const calls: PendingCall[] = [];
  let isStarted = false;
  let notStored: { e: unknown } | null = null;
  started.catch((e) => (notStored = { e }));
  // A user's own keys for this model and its fallbacks (model.credentials), else the install's.
  const credentials = deps.hooks.has('model.credentials') ? await deps.hooks.call('model.credentials', { run: run.info, model: run.model }) : undefined;
  const stream = deps.model.stream({
    model: run.model,
    messages: spec.messages,
    tools: offered.length ? ToolRegistry.specs(offered) : undefined,
    jsonSchema: spec.jsonSchema,
    signal: run.signal,
    ...(credentials?.size ? { credentials } : {}),
  });
  for await (const d of stream) {
    if (notStored) throw (notStored as { e: unknown }).e;
    if (!isStarted) {
      firstDelta();
      isStarted = true;
    }
    switch (d.type) {
      case 'text':
        run.patch(turn, { patch_type: 'add_content', data: { text_delta: d.text } });
        break;
      case 'thinking':
        run.patch(turn, { patch_type: 'add_thinking', data: { text_delta: d.text } });
        break;
      case 'tool_call': {
        const c = (calls[d.index] ??= { name: '', args: '' });
        if (d.id) c.id = d.id;
        if (d.name) c.name += d.name;
        if (d.args) c.args += d.args;
        break;
      }
      case 'usage':
        meta.cached = d.cached_input_tokens ?? 0;
        meta.estimated = !!d.estimated;
        run.patch(turn, { patch_type: 'usage', data: { input_tokens: d.input_tokens, output_tokens: d.output_tokens, ...(d.estimated ? { estimated: true } : {}) } });
        break;
      case 'model':
        // The model that answers (a fallback's, maybe): the turn says so (docs/models-and-usage.md).
        turn.model = d.model;
        turn.context_window = contextWindowOf(run.config.model, d.model);
        meta.attempts = d.attempts;
        meta.fallbackFrom = d.fallback_from;
        meta.credential = d.credential ?? 'install';
        break;
    }
  }
  await started;
  return calls.filter(Boolean);
}

async function runTools(run: RunState, deps: LoopDeps, spec: LoopSpec, turn: Turn, pending: PendingCall[], offered: Tool[]): Promise<boolean> {
  if (!pending.length) return false;
  await deps.beforeTools?.();
  const calls: { call: ToolCall; args: unknown }[] = [];
  for (const p of pending) {
    let args: unknown = {};
    let error: string | null = null;
    try {
      args = p.args.trim() ? JSON.parse(p.args) : {};
      if (!args || typeof args !== 'object' || Array.isArray(args)) throw new Error('arguments must be a JSON object');
    } catch (e) {
      // A tool error the model sees and can fix (docs/errors.md and docs/trust-boundary.md), never a failed run.
      error = badArguments(p.name, p.args, (e as Error).message);
    }
    const id = newId('tc');
    // A well-formed question pauses the loop; a malformed one gets the schema error like any tool.
    const tool = offered.find((t) => t.name === p.name);
    const valid = !error && !!tool && !deps.registry.validate(tool, args);
    const question = valid && !!tool?.pauses;
    // Policy: asked only of calls that would run (unknown tools and bad arguments fail anyway).
    const decision = valid && !question ? await deps.hooks.ask('tool.before', { run: run.info, loopId: spec.loopId, callId: id, tool: tool!, args: args as Record<string, unknown>, workspace: deps.workspace }) : undefined;
    // What cannot be parsed is not stored as the call's arguments: the turn list stays valid for
    // any model it is sent to (the error result quotes it).
    let shownArgs = error ? '{}' : p.args || '{}';
    if (question && spec.loopId !== 'root') {
      // The client needs to know the question comes from a sub-agent (`source_loop`, docs/sessions-and-runs.md).
      args = { ...(args as object), source_loop: { loop_id: spec.loopId, parent_fork_tool_call_id: spec.parentCallId, depth: spec.depth } };
      shownArgs = JSON.stringify(args);
    }
    const awaiting = question || decision?.action === 'ask';
    run.patch(turn, {
      patch_type: 'add_tool_call',
      data: {
        id,
        tool_name: p.name,
        display_name: displayName(offered, p.name),
        arguments: shownArgs,
        status: awaiting ? 'awaiting_answer' : 'pending',
        ...(decision?.action === 'ask' ? { question: { ...decision.question, type: 'approval' as const, tool_call_id: id } } : {}),
      },
    });
    const call = turn.tool_calls.find((c) => c.id === id)!;
    if (decision?.action === 'deny') error = decision.message;
    if (decision) void deps.hooks.emit('tool.call', { run: run.info, loopId: spec.loopId, callId: id, tool: p.name, status: decision.action === 'deny' ? 'denied' : 'paused', durationMs: 0, args, result: null });
    if (error) run.patch(turn, { patch_type: 'tool_result', data: { tool_call_id: id, result: error, status: 'error', duration_ms: 0 } });
    else calls.push({ call, args });
  }

  const runnable = calls.filter((c) => c.call.status === 'pending');
  // Sub-agents and read-only tools run side by side; anything else runs in the model's order.
  const parallel = (c: { call: ToolCall }) => !!offered.find((t) => t.name === c.call.tool_name)?.parallel;
  let i = 0;
  let subPaused = false;
  while (i < runnable.length) {
    let j = i + 1;
    if (parallel(runnable[i])) while (j < runnable.length && parallel(runnable[j])) j++;
    const done = await Promise.all(runnable.slice(i, j).map((c) => runOne(run, deps, spec, turn, c.call, c.args, offered)));
    if (done.includes('paused')) subPaused = true;
    i = j;
  }
  // A sub-agent that asked a question leaves its fork call pending; the turn pauses with it.
  return subPaused || turn.tool_calls.some((c) => c.status === 'awaiting_answer');
}

function badArguments(tool: string, raw: string, why: string): string {
  const quoted = raw.length > 2000 ? `${raw.slice(0, 2000)}... (${raw.length} characters)` : raw;
  return `Error: the arguments of this ${tool} call are not a valid JSON object (${why}), so it did not run. They were: ${quoted}\nCall ${tool} again with a JSON object that matches its schema.`;
}

/**
 * One call run to its result (exported for an approved call, run when its answer comes), looked up
 * among the tools its model call offered.
 */
export async function runOne(run: RunState, deps: LoopDeps, spec: LoopSpec, turn: Turn, call: ToolCall, args: unknown, offered: Tool[] = spec.tools): Promise<'done' | 'paused'> {
  if (run.signal.aborted) throw run.signal.reason;
  const t0 = performance.now();
  let lastProgress = 0;
  const ctx: ToolContext = {
    userId: run.userId,
    sessionId: run.sessionId,
    callId: call.id,
    loopId: spec.loopId,
    signal: run.signal,
    // Progress notes reach clients as update_tool_call patches, at most 4 a second per call.
    progress: (message) => {
      const now = performance.now();
      if (now - lastProgress < 250 || call.status !== 'pending' || run.signal.aborted) return;
      lastProgress = now;
      run.patch(turn, { patch_type: 'update_tool_call', data: { id: call.id, status: 'pending', progress: String(message).slice(0, 500) } });
    },
    workspace: deps.workspace,
    env: deps.env,
    llm: deps.model,
    fork: deps.forks?.(run, deps, spec, call),
    recheck: async (again) => {
      const tool = offered.find((t) => t.name === call.tool_name);
      const d = tool && (await deps.hooks.ask('tool.before', { run: run.info, loopId: spec.loopId, callId: call.id, tool, args: again, workspace: deps.workspace }));
      // Mid-call nobody can be asked: an `ask` stops it like a deny.
      if (!d) return null;
      return d.action === 'deny' ? d.message : `it needs a person's approval; call ${call.tool_name} with it directly to be asked`;
    },
  };
  const r = await executeTool(deps.registry, offered, call.tool_name, args, ctx, run.config.limits.toolOutput);
  if (run.signal.aborted) throw run.signal.reason;
  void deps.hooks.emit('tool.call', { run: run.info, loopId: spec.loopId, callId: call.id, tool: call.tool_name, status: r === 'paused' ? 'paused' : r.status, durationMs: performance.now() - t0, args, result: r === 'paused' ? null : r.output });
  if (r === 'paused') return 'paused';
  if (call.status !== 'pending') return 'done'; // closed meanwhile (e.g. cancelled)
  run.patch(turn, { patch_type: 'tool_result', data: { tool_call_id: call.id, result: r.output, status: r.status, duration_ms: Math.round(performance.now() - t0) } });
  return 'done';
}

/** End a turn that did not finish: unfinished tool calls are cancelled with a result saying so. */
export async function closeTurn(run: RunState, turn: Turn, status: 'interrupted' | 'failed', t0?: number) {
  for (const p of cancelOpenCalls(turn, status)) run.patch(turn, p);
  await run.endTurn(turn, status, t0);
}

/** The tool_result patches that cancel a closing turn's open tool calls, saying why. */
export function cancelOpenCalls(turn: Turn, status: 'interrupted' | 'failed'): Patch[] {
  const why = status === 'interrupted' ? 'cancelled: the run was stopped before this tool call finished' : 'cancelled: the run failed before this tool call finished';
  return turn.tool_calls.filter(isOpen).map((c) => ({ patch_type: 'tool_result', data: { tool_call_id: c.id, result: why, status: 'cancelled', duration_ms: 0 } }));
}
