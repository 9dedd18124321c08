import { Ajv } from 'ajv';
import type { Tool } from '../tools/types.js';
import { toModelMessages } from '../conversation/history.js';
import type { ChatDeps } from './chat-deps.js';
import { runLoop, runOne, type LoopDeps, type LoopOutcome } from './loop.js';
import { ModelError, type ModelMessage } from '../models/port.js';
import type { RunState } from './run-state.js';
import type { Claimed } from './run-store.js';
import type { RunEnd } from './run-executor.js';
import type { StoredTurn } from '../conversation/turn-store.js';
import { hasOpenCalls, type ToolCall, type Turn } from '../conversation/turns.js';
import { isApproval } from './approval.js';
import { forkResult, forkService, subagentMessages, toolsAtDepth } from './forks.js';

/** How ChatService starts a run's body: what the start prepared, and where the body begins. */
export interface RunOptions {
  /** Leave the start gate and wait for a share of the event loop: awaited once the model is about to be called. */
  started: () => Promise<void>;
  mode: string;
  headless: boolean;
  schema?: Record<string, unknown>;
  resumeFrom?: Turn;
  /** The user turn of a new message as stored (memory_refs included), and its content. */
  user?: StoredTurn;
  /** The session had no turn before this message: its history is that message alone. */
  firstMessage?: boolean;
  /** The checkpoint of the new message, being taken. */
  checkpoint?: Promise<void>;
  /** A call of `resumeFrom` whose approval allowed it: it runs before the loop goes on. */
  approved?: ToolCall;
}

export type RunBodyDeps = Pick<ChatDeps, 'config' | 'conversation' | 'turns' | 'model' | 'tools' | 'workspaces' | 'prompt' | 'hooks'>;

/**
 * What a run does once started (src/core/engine/chat-service.ts starts it): the root loop for a new
 * message, or the chain of loops a question paused; structured output; how the run ended.
 */
export class RunBody {
  constructor(private readonly deps: RunBodyDeps) {}

  /** The body of a run; it ends only once the checkpoint of its message is recorded. */
  async execute(state: RunState, claimed: Claimed, opts: RunOptions): Promise<RunEnd> {
    try {
      return await this.body(state, claimed, opts);
    } finally {
      await opts.checkpoint;
    }
  }

  /** The root loop (or the resumed chain), structured output, the outcome. */
  private async body(state: RunState, claimed: Claimed, opts: RunOptions): Promise<RunEnd> {
    const checkpoint = opts.checkpoint;
    const deps: LoopDeps = {
      model: this.deps.model,
      hooks: this.deps.hooks,
      registry: this.deps.tools,
      workspace: this.deps.workspaces.forSession(state.userId, state.sessionId),
      env: claimed.env ?? undefined,
      forks: forkService,
      retool: this.retool(state, claimed),
      beforeTools: checkpoint && (() => checkpoint),
    };
    let out: LoopOutcome;
    // The prompt, the history and the tools are independent reads: one wait, not three. What the
    // claim and the stored user turn already tell (memory_enabled, the recalled memories, a first
    // message's history) is not read again.
    const fresh = !opts.resumeFrom;
    const [prompt, history, tools] = await Promise.all([
      this.deps.prompt.build({ userId: state.userId, sessionId: state.sessionId, mode: opts.mode, memoryEnabled: claimed.memory_enabled, userTurn: opts.user?.turn, setup: claimed.session_setup }),
      !fresh ? [] : opts.firstMessage && opts.user ? toModelMessages([opts.user]) : this.deps.conversation.modelHistory(state.sessionId),
      fresh && opts.mode !== 'planning' ? this.deps.tools.forSession(state, claimed.disable_tools) : [],
    ]);
    const messages: ModelMessage[] = [{ role: 'system', content: prompt }];
    await opts.started();
    if (opts.resumeFrom) out = await this.resumeChain(state, deps, claimed, opts.resumeFrom, opts.approved);
    else {
      messages.push(...history);
      out = await runLoop(state, deps, { loopId: 'root', parentCallId: null, depth: 0, messages, tools, jsonSchema: opts.schema });
    }
    if (out.kind === 'done' && opts.schema) out = { kind: 'done', text: JSON.stringify(await this.structured(state, deps, messages, out.text, opts.schema)) };
    if (out.kind === 'paused') return { status: 'completed', finish_reason: await this.pauseReason(state.sessionId), result: null, sessionStatus: 'waiting_for_input' };
    let result: unknown = null;
    if (opts.headless) result = opts.schema ? { output: JSON.parse(out.text), schema: opts.schema } : { output: out.text };
    return { status: 'completed', finish_reason: out.kind === 'max_turns' ? 'max_turns' : 'stop', result, sessionStatus: 'completed' };
  }

  /**
   * A loop's tools listed again when the registry's generation moved since they were listed (an
   * MCP server's tools/list_changed, a provider added). Loops offered no tools (planning, the
   * structured-output repair) stay without.
   */
  private retool(state: RunState, claimed: Claimed): LoopDeps['retool'] {
    const registry = this.deps.tools;
    const at = new WeakMap<object, number>();
    const start = registry.generation;
    return async (spec) => {
      const seen = at.get(spec) ?? start;
      if (registry.generation === seen || !spec.tools.length) return;
      at.set(spec, registry.generation);
      spec.tools = toolsAtDepth(await registry.forSession(state, claimed.disable_tools), spec.depth, this.deps.config.model.maxForkDepth);
    };
  }

  /**
   * Continue from a turn whose question was answered: run its loop on; when a sub-agent loop
   * finishes, its answer becomes the parent fork call's result and the parent loop continues.
   */
  private async resumeChain(state: RunState, deps: LoopDeps, claimed: Claimed, from: Turn, approved?: ToolCall): Promise<LoopOutcome> {
    const max = this.deps.config.model.maxForkDepth;
    const allowed = await this.deps.tools.forSession(state, claimed.disable_tools);
    let turn = from;
    if (approved) {
      const { depth } = loopDepth(await this.deps.conversation.stored(state.sessionId), turn);
      await this.runApproved(state, deps, turn, approved, depth, toolsAtDepth(allowed, depth, max));
    }
    for (;;) {
      if (hasOpenCalls(turn)) return { kind: 'paused' };
      const stored = await this.deps.conversation.stored(state.sessionId);
      const { owner, depth } = loopDepth(stored, turn);
      const history = toModelMessages(stored, turn.loop_id);
      let messages: ModelMessage[];
      if (turn.loop_id === 'root') messages = [{ role: 'system', content: await this.deps.prompt.build({ userId: state.userId, sessionId: state.sessionId, mode: claimed.mode }) }, ...history];
      else {
        const fork = owner(turn.parent_fork_tool_call_id!)!.tool_calls.find((c) => c.id === turn.parent_fork_tool_call_id)!;
        messages = [...subagentMessages((JSON.parse(fork.arguments) as { prompt: string }).prompt), ...history];
      }
      const out = await runLoop(state, deps, { loopId: turn.loop_id, parentCallId: turn.parent_fork_tool_call_id, depth, messages, tools: toolsAtDepth(allowed, depth, max) });
      if (out.kind === 'paused' || turn.loop_id === 'root') return out;
      const parent = owner(turn.parent_fork_tool_call_id!)!;
      const result = forkResult(out);
      state.patch(parent, { patch_type: 'tool_result', data: { tool_call_id: turn.parent_fork_tool_call_id!, result, status: 'done', duration_ms: 0 } });
      if (!hasOpenCalls(parent)) parent.status = 'completed';
      // The parent turn, paused until now, ends again with its status (docs/socket-protocol.md).
      await state.endTurn(parent, parent.status);
      turn = parent;
    }
  }

  /**
   * Run a call a person allowed on its paused turn (the policy is not asked again), then store the
   * turn: completed when nothing else waits in it. Stopped meanwhile, the call is closed cancelled.
   */
  private async runApproved(state: RunState, deps: LoopDeps, turn: Turn, call: ToolCall, depth: number, tools: Tool[]) {
    const spec = { loopId: turn.loop_id, parentCallId: turn.parent_fork_tool_call_id, depth, messages: [], tools };
    try {
      await runOne(state, deps, spec, turn, call, JSON.parse(call.arguments));
    } catch (e) {
      if (call.status === 'pending') state.patch(turn, { patch_type: 'tool_result', data: { tool_call_id: call.id, result: 'cancelled: the run was stopped before this tool call finished', status: 'cancelled', duration_ms: 0 } });
      throw e;
    } finally {
      if (!hasOpenCalls(turn)) turn.status = 'completed';
      // Its turn:end again, with the status the call left it in (docs/socket-protocol.md).
      await state.endTurn(turn, turn.status);
    }
  }

  /** Why a run paused: every open call waits for an approval (`tool_approval`), else a question. */
  private async pauseReason(sessionId: string): Promise<'tool_approval' | 'tool_question'> {
    const waiting = (await this.deps.conversation.turns(sessionId)).flatMap((t) => t.tool_calls.filter((c) => c.status === 'awaiting_answer'));
    return waiting.length && waiting.every((c) => isApproval(c.pending_question_ref)) ? 'tool_approval' : 'tool_question';
  }

  /** Validate structured output; one repair round with the validator's message, then fail. */
  private async structured(state: RunState, deps: LoopDeps, messages: ModelMessage[], text: string, schema: Record<string, unknown>): Promise<unknown> {
    const validate = new Ajv({ strict: false, allErrors: true }).compile(schema);
    const check = (t: string): { ok: true; value: unknown } | { ok: false; why: string } => {
      let value: unknown;
      try {
        value = JSON.parse(t.trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
      } catch (e) {
        return { ok: false, why: `not valid JSON (${(e as Error).message})` };
      }
      if (!validate(value)) return { ok: false, why: (validate.errors ?? []).map((er) => `${er.instancePath || '(root)'} ${er.message}`).join('; ') };
      return { ok: true, value };
    };
    let r = check(text);
    if (r.ok) return r.value;
    messages.push({ role: 'user', content: `Your answer does not match the required JSON Schema: ${r.why}. Reply with only the corrected JSON.` });
    const again = await runLoop(state, deps, { loopId: 'root', parentCallId: null, depth: 0, messages, tools: [], jsonSchema: schema });
    if (again.kind === 'done') {
      r = check(again.text);
      if (r.ok) return r.value;
    }
    throw new ModelError('OUTPUT_SCHEMA_INVALID', `the model's output does not match output_schema: ${r.ok ? 'no answer' : r.why}`);
  }
}

/** A loop's nesting depth, counted up the chain of fork calls from its turn. */
function loopDepth(stored: StoredTurn[], turn: Turn): { owner: (callId: string) => Turn | undefined; depth: number } {
  const owner = (callId: string) => stored.find((s) => s.turn.tool_calls.some((c) => c.id === callId))?.turn;
  let depth = 0;
  for (let t: Turn | undefined = turn; t?.parent_fork_tool_call_id; t = owner(t.parent_fork_tool_call_id)) depth++;
  return { owner, depth };
}
