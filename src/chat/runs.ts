import { Ajv } from 'ajv';
import type { Config } from '../config/index.js';
import type { Database } from '../db/index.js';
import { Errors, AppError } from '../server/errors.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { Workspaces } from '../files/workspace.js';
import { asset } from '../lib/assets.js';
import { randomToken } from '../lib/ids.js';
import type { EventLog } from './events.js';
import { toModelMessages } from './history.js';
import { closeTurn, runLoop, type LoopDeps, type LoopOutcome } from './loop.js';
import { ModelError, type ModelMessage, type ModelPort } from './model.js';
import { RunState } from './run-state.js';
import { ChatSend, issues } from './send-schema.js';
import type { TurnStore } from './turn-store.js';
import { recoverOrphans } from './recovery.js';
import { hasOpenCalls, type Turn } from './turns.js';
import { answerText, type Question } from '../agents/question.js';
import { subagentMessages, toolsAtDepth } from '../agents/subagents.js';

export interface RunDeps {
  config: Config;
  db: Database;
  log: EventLog;
  turns: TurnStore;
  model: ModelPort;
  tools: ToolRegistry;
  workspaces: Workspaces;
  loopServices?: LoopDeps['loopServices'];
}

interface Active {
  abort: AbortController;
  state: RunState;
  done: Promise<void>;
}

interface Claimed {
  mode: 'planning' | 'executing';
  model: string;
  disable_tools: string[];
  env: Record<string, string> | null;
}

/** One run per session, owned by this process (instance id in sessions.run_owner, heartbeat in service_instances). */
export class RunManager {
  readonly instanceId = `inst_${randomToken(16)}`;
  private active = new Map<string, Active>();
  private heartbeat: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly deps: RunDeps) {}

  private conn() {
    return this.deps.db.em().getConnection();
  }

  async start() {
    await this.conn().execute('insert into service_instances (id) values (?)', [this.instanceId]);
    await recoverOrphans(this.deps);
    this.heartbeat = setInterval(() => {
      void this.conn()
        .execute('update service_instances set heartbeat_at = now() where id = ?', [this.instanceId])
        .then(() => recoverOrphans(this.deps))
        .catch(() => {});
    }, 10_000);
    this.heartbeat.unref();
  }

  isRunning(sessionId: string) {
    return this.active.has(sessionId);
  }

  liveTurns(sessionId: string): Turn[] {
    return [...(this.active.get(sessionId)?.state.live.values() ?? [])];
  }

  /** chat:send: validates, claims the session, stores the user turn, starts the loop. */
  async send(userId: string, raw: unknown): Promise<{ turn_id: string | null }> {
    if (this.closed) throw Errors.unavailable('SHUTTING_DOWN', 'the service is shutting down');
    const parsed = ChatSend.safeParse(raw);
    if (!parsed.success) throw new AppError(422, 'VALIDATION_ERROR', issues(parsed.error));
    const p = parsed.data;
    if (p.askuser_answer) return this.answer(userId, p.session_id, p.askuser_answer);
    if (p.output_schema && !p.headless) throw new AppError(422, 'VALIDATION_ERROR', 'output_schema: requires headless: true');
    if (p.output_schema) {
      try {
        new Ajv({ strict: false }).compile(p.output_schema);
      } catch (e) {
        throw new AppError(422, 'VALIDATION_ERROR', `output_schema: not a valid JSON Schema (${(e as Error).message})`);
      }
    }
    const text = typeof p.message === 'string' ? p.message : p.message.filter((m) => m.type === 'text').map((m) => (m as { text: string }).text).join('\n');
    if (!text.trim() && typeof p.message === 'string') throw new AppError(422, 'VALIDATION_ERROR', 'message: must not be empty');
    const claimed = await this.claim(userId, p.session_id, ['created', 'completed', 'failed', 'interrupted']);
    const mode = p.mode ?? claimed.mode;
    const state = await this.newRun(userId, p.session_id, claimed.model);
    state.emit('chat:start', { mode, headless: !!p.headless });
    const user = state.newTurn('user', 'root', null, 'completed');
    if (typeof p.message === 'string') user.blocks.push({ type: 'text', content: p.message, tool_call_id: null, tool_name: null, display_name: null });
    else
      for (const part of p.message)
        user.blocks.push({ type: part.type === 'text' ? 'text' : 'image', content: part.type === 'text' ? part.text : part.image_url.url, tool_call_id: null, tool_name: null, display_name: null });
    await state.startTurn(user, p.message);
    await state.endTurn(user, 'completed');
    this.launch(state, claimed, { mode, headless: !!p.headless, schema: p.output_schema });
    return { turn_id: user.turn_id };
  }

  /**
   * chat:send with askuser_answer: validated against the pending question (nothing changes when it
   * is wrong), then the paused loop resumes: chat:start, tool_result on the paused turn, next turns.
   */
  private async answer(userId: string, sessionId: string, a: { tool_call_id: string; selections: Record<string, number[]>; custom: Record<string, string> }) {
    const [row] = await this.conn().execute<{ status: string }[]>('select status from sessions where id = ? and user_id = ?', [sessionId, userId]);
    if (!row) throw Errors.notFound('session');
    if (row.status === 'running') throw Errors.sessionBusy();
    const stored = await this.deps.turns.list(sessionId);
    const turn = stored.map((s) => s.turn).find((t) => t.tool_calls.some((c) => c.id === a.tool_call_id && c.status === 'awaiting_answer'));
    if (row.status !== 'waiting_for_input' || !turn) throw new AppError(409, 'NO_PENDING_QUESTION', `no pending question with tool_call_id ${a.tool_call_id}`);
    const call = turn.tool_calls.find((c) => c.id === a.tool_call_id)!;
    const questions = (JSON.parse(call.arguments) as { questions: Question[] }).questions;
    const text = answerText(questions, a);
    const claimed = await this.claim(userId, sessionId, ['waiting_for_input']);
    const state = await this.newRun(userId, sessionId, claimed.model);
    state.emit('chat:start', { mode: claimed.mode, headless: false });
    state.patch(turn, { patch_type: 'tool_result', data: { tool_call_id: call.id, result: text, status: 'done', duration_ms: 0 } });
    if (!hasOpenCalls(turn)) turn.status = 'completed';
    await this.deps.turns.update(turn);
    this.launch(state, claimed, { mode: claimed.mode, headless: false, resumeFrom: turn });
    return { turn_id: null };
  }

  /**
   * Continue from a turn whose question was answered: run its loop on; when a sub-agent loop
   * finishes, its answer becomes the parent fork call's result and the parent loop continues.
   */
  private async resumeChain(state: RunState, deps: LoopDeps, claimed: Claimed, from: Turn): Promise<LoopOutcome> {
    const max = this.deps.config.model.maxForkDepth;
    const allowed = this.deps.tools.allowed(claimed.disable_tools);
    let turn = from;
    for (;;) {
      if (hasOpenCalls(turn)) return { kind: 'paused' };
      const stored = await this.deps.turns.list(state.sessionId);
      const owner = (callId: string) => stored.find((s) => s.turn.tool_calls.some((c) => c.id === callId))?.turn;
      let depth = 0;
      for (let t: Turn | undefined = turn; t?.parent_fork_tool_call_id; t = owner(t.parent_fork_tool_call_id)) depth++;
      const history = toModelMessages(stored, turn.loop_id);
      let messages: ModelMessage[];
      if (turn.loop_id === 'root') messages = [{ role: 'system', content: this.systemPrompt(claimed.mode) }, ...history];
      else {
        const fork = owner(turn.parent_fork_tool_call_id!)!.tool_calls.find((c) => c.id === turn.parent_fork_tool_call_id)!;
        messages = [...subagentMessages((JSON.parse(fork.arguments) as { prompt: string }).prompt), ...history];
      }
      const out = await runLoop(state, deps, { loopId: turn.loop_id, parentCallId: turn.parent_fork_tool_call_id, depth, messages, tools: toolsAtDepth(allowed, depth, max) });
      if (out.kind === 'paused' || turn.loop_id === 'root') return out;
      const parent = owner(turn.parent_fork_tool_call_id!)!;
      const result = out.kind === 'max_turns' ? `${out.text}\n\n[the sub-agent stopped at the bound on model calls per run]` : out.text || '(the sub-agent finished without a text answer)';
      state.patch(parent, { patch_type: 'tool_result', data: { tool_call_id: turn.parent_fork_tool_call_id!, result, status: 'done', duration_ms: 0 } });
      if (!hasOpenCalls(parent)) parent.status = 'completed';
      await this.deps.turns.update(parent);
      turn = parent;
    }
  }

  /** Atomically move a session from one of `from` to running, owned by this process. */
  async claim(userId: string, sessionId: string, from: string[]): Promise<Claimed> {
    const rows = await this.conn().execute<Claimed[]>(
      `update sessions set status = 'running', run_owner = ?, updated_at = now()
       where id = ? and user_id = ? and status in (${from.map(() => '?').join(', ')})
       returning mode, model, disable_tools, env`,
      [this.instanceId, sessionId, userId, ...from],
    );
    if (rows.length) return { ...rows[0], model: rows[0].model ?? this.deps.config.model.default };
    const [row] = await this.conn().execute<{ status: string }[]>('select status from sessions where id = ? and user_id = ?', [sessionId, userId]);
    if (!row) throw Errors.notFound('session');
    if (row.status === 'running') throw Errors.sessionBusy();
    throw new AppError(409, 'INVALID_STATE', `the session is ${row.status}`);
  }

  async newRun(userId: string, sessionId: string, model: string): Promise<RunState> {
    await this.deps.log.open(sessionId);
    const abort = new AbortController();
    const state = new RunState(sessionId, userId, model, this.deps.config, this.deps.log, this.deps.turns, abort.signal, await this.deps.turns.nextSequence(sessionId));
    this.active.set(sessionId, { abort, state, done: Promise.resolve() });
    return state;
  }

  systemPrompt(mode: string): string {
    return mode === 'planning' ? `${asset('templates/prompts/system.md')}\n\n${asset('templates/prompts/planning.md')}` : asset('templates/prompts/system.md');
  }

  /** Run the root loop in the background and finish the run whatever happens. */
  launch(state: RunState, claimed: Claimed, opts: { mode: string; headless: boolean; schema?: Record<string, unknown>; resumeFrom?: Turn }) {
    const entry = this.active.get(state.sessionId)!;
    entry.done = (async () => {
      let status: 'completed' | 'failed' | 'interrupted' = 'completed';
      let finish = 'stop';
      let result: unknown = null;
      let sessionStatus = 'completed';
      try {
        const deps: LoopDeps = {
          model: this.deps.model,
          registry: this.deps.tools,
          workspace: this.deps.workspaces.forSession(state.userId, state.sessionId),
          env: claimed.env ?? undefined,
          loopServices: this.deps.loopServices,
        };
        let out: LoopOutcome;
        const messages: ModelMessage[] = [{ role: 'system', content: this.systemPrompt(opts.mode) }];
        if (opts.resumeFrom) out = await this.resumeChain(state, deps, claimed, opts.resumeFrom);
        else {
          messages.push(...toModelMessages(await this.deps.turns.list(state.sessionId)));
          const tools = opts.mode === 'planning' ? [] : this.deps.tools.allowed(claimed.disable_tools);
          out = await runLoop(state, deps, { loopId: 'root', parentCallId: null, depth: 0, messages, tools, jsonSchema: opts.schema });
        }
        if (out.kind === 'done' && opts.schema) out = { kind: 'done', text: JSON.stringify(await this.structured(state, deps, messages, out.text, opts.schema)) };
        if (out.kind === 'paused') {
          finish = 'tool_question';
          sessionStatus = 'waiting_for_input';
        } else {
          if (out.kind === 'max_turns') finish = 'max_turns';
          if (opts.headless) result = opts.schema ? { output: JSON.parse(out.text), schema: opts.schema } : { output: out.text };
        }
      } catch (e) {
        if (state.signal.aborted) {
          status = 'interrupted';
          finish = 'interrupted';
          sessionStatus = 'interrupted';
        } else {
          status = 'failed';
          finish = 'error';
          sessionStatus = 'failed';
          const code = e instanceof ModelError ? e.code : (e as { code?: string }).code === 'RUNNER_UNAVAILABLE' ? 'RUNNER_UNAVAILABLE' : 'RUN_FAILED';
          state.emit('system:error', { code, message: (e as Error).message });
        }
        for (const t of [...state.live.values()]) await closeTurn(state, t, status === 'interrupted' ? 'interrupted' : 'failed').catch(() => {});
      } finally {
        await this.finish(state, sessionStatus, { status, result, finish_reason: finish });
      }
    })();
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

  private async finish(state: RunState, sessionStatus: string, end: { status: string; result: unknown; finish_reason: string }) {
    try {
      await this.conn().execute(`update sessions set status = ?, run_owner = null, updated_at = now() where id = ? and run_owner = ?`, [sessionStatus, state.sessionId, this.instanceId]);
    } finally {
      state.emit('chat:end', end);
      this.active.delete(state.sessionId);
      await this.deps.log.flush().catch(() => {});
      this.deps.log.release(state.sessionId);
    }
  }

  /** chat:stop: ends the run within 2 s (the loop closes its turn and tool calls). */
  async stop(userId: string, sessionId: string): Promise<boolean> {
    const a = this.active.get(sessionId);
    if (!a || a.state.userId !== userId) {
      const [row] = await this.conn().execute<{ status: string }[]>('select status from sessions where id = ? and user_id = ?', [sessionId, userId]);
      if (!row) throw Errors.notFound('session');
      return false;
    }
    a.abort.abort(new Error('stopped'));
    await Promise.race([a.done, new Promise((r) => setTimeout(r, 2000))]);
    return true;
  }

  /** Shutdown: stop every run (they end `interrupted`), then forget this instance. */
  async close() {
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    const runs = [...this.active.values()];
    for (const a of runs) a.abort.abort(new Error('service shutting down'));
    await Promise.all(runs.map((a) => a.done.catch(() => {})));
    await this.conn().execute('delete from service_instances where id = ?', [this.instanceId]).catch(() => {});
  }
}
