import { lastCompaction, MASK_OVER_CHARS, maskedUntil, toModelMessages } from '../../core/conversation/history.js';
import type { Hooks } from '../../core/engine/hooks.js';
import type { ModelDelta, ModelMessage, ModelPort } from '../../core/models/port.js';
import type { RunState } from '../../core/engine/run-state.js';
import { messagesTokens } from '../../core/models/tokenizer.js';
import type { StoredTurn } from '../../core/conversation/turn-store.js';
import { turnText, type Turn } from '../../core/conversation/turns.js';
import { newId } from '../../platform/lib/ids.js';

export type Trigger = 'manual' | 'auto';

export interface CompactorDeps {
  model: ModelPort;
  /** The active branch's stored turns. */
  stored(sessionId: string): Promise<StoredTurn[]>;
  /** The session's task list (TaskList), kept verbatim. */
  tasks(sessionId: string): Promise<{ id: string; subject: string; status: string; description: string }[]>;
  /** Newest root turns kept verbatim (AGENTSVC_COMPACT_KEEP_TURNS). */
  keepTurns: number;
  /** Told of the summary's model call (`model.call`, purpose `compaction`): usage, budgets, metrics. */
  hooks?: Hooks;
}

export type Plan = { archived: StoredTurn[]; cut: number } | { skipped: string };

const SYSTEM = [
  'You compact the earlier part of a conversation between a user and an AI agent that works with tools in a workspace.',
  'Write a summary the agent can continue from without the original messages. Keep, as short bullet points under headings:',
  "- Goal: the user's goal and requirements, in their words where it matters;",
  '- Decisions: what was decided and why;',
  '- Done: what was done, and the files created, changed or read (paths);',
  '- Open: open questions, problems and next steps.',
  'Do not invent anything. Do not address the user. Answer with the summary only.',
].join('\n');

/** Tool output beyond this many characters is cut in the material the summariser reads. */
const TOOL_OUTPUT_CHARS = 1500;
/** The material the summariser reads is at most this long (the newest part is kept). */
const MATERIAL_CHARS = 200_000;

function transcript(archived: StoredTurn[], previous: string | null): string {
  const lines: string[] = [];
  if (previous) lines.push(`[Summary of what came before]\n${previous}`);
  for (const { turn } of archived) {
    const text = turnText(turn);
    if (turn.role === 'user') lines.push(`[User]\n${text}`);
    else if (turn.role === 'assistant') {
      if (text) lines.push(`[Agent]\n${text}`);
      for (const c of turn.tool_calls) {
        const r = c.result ?? '(no result)';
        lines.push(`[Tool ${c.tool_name}] ${c.arguments.slice(0, 500)}\n-> ${r.length > TOOL_OUTPUT_CHARS ? `${r.slice(0, TOOL_OUTPUT_CHARS)}... (${r.length - TOOL_OUTPUT_CHARS} more characters)` : r}`);
      }
    }
  }
  const all = lines.join('\n\n');
  return all.length > MATERIAL_CHARS ? `(earliest part left out)\n${all.slice(-MATERIAL_CHARS)}` : all;
}

/**
 * Compaction of a session's main loop: everything after the first user message and before the
 * newest `keepTurns` turns is folded into a summary written by the model. Turns are whole units
 * (an assistant turn holds its tool calls with their results), so a cut never splits a call from
 * its result. The first user message and the task list are kept verbatim.
 */
export class Compactor {
  constructor(private readonly d: CompactorDeps) {}

  plan(stored: StoredTurn[]): Plan {
    const root = stored.filter((s) => s.turn.loop_id === 'root' && !s.turn.deprecated && s.turn.kind !== 'compaction');
    const prev = lastCompaction(stored);
    const from = prev ? Number(prev.archived_until ?? prev.sequence) : -1;
    const first = root.find((s) => s.turn.role === 'user');
    const body = root.filter((s) => s !== first && s.turn.sequence >= from && s.turn.status !== 'streaming');
    const keep = Math.min(this.d.keepTurns, body.length);
    const archived = body.slice(0, body.length - keep);
    if (archived.length < 2) {
      return { skipped: `too little to compact: ${body.length} turn(s) since the last summary, and the newest ${this.d.keepTurns} stay as they are` };
    }
    const cut = body[body.length - keep]?.turn.sequence ?? archived[archived.length - 1].turn.sequence + 1;
    return { archived, cut };
  }

  /**
   * The cheap step: how many old tool outputs a masking compaction would elide (those of the turns
   * the plan would fold, not yet masked), and the history's tokens with them elided.
   */
  maskable(stored: StoredTurn[], plan: Extract<Plan, { archived: StoredTurn[] }>): { outputs: number; tokensAfter: number } {
    const already = maskedUntil(stored);
    const outputs = plan.archived.filter((s) => s.turn.sequence >= already).flatMap((s) => s.turn.tool_calls.filter((c) => (c.result ?? '').length > MASK_OVER_CHARS)).length;
    const probe = { ...stored[0].turn, kind: 'compaction' as const, masked_until: plan.cut, failure_reason: null, deprecated: false, loop_id: 'root' };
    return { outputs, tokensAfter: messagesTokens(toModelMessages([...stored, { turn: probe, content: null }])) };
  }

  /** Record a masking compaction: old tool outputs elided from what the model sees, no model call. */
  async mask(state: RunState, trigger: Trigger, plan: Extract<Plan, { archived: StoredTurn[] }>): Promise<Turn> {
    const stored = await this.d.stored(state.sessionId);
    const before = messagesTokens(toModelMessages(stored));
    const { outputs, tokensAfter } = this.maskable(stored, plan);
    const entry = state.newTurn('system', 'root', null, 'streaming');
    const note = `Elided ${outputs} old tool output(s) from what the model sees; the turns stay listed.`;
    Object.assign(entry, { kind: 'compaction', compaction_id: newId('cmp'), trigger, archived_count: outputs, tokens_before: before, masked_until: plan.cut });
    await state.startTurn(entry);
    state.patch(entry, { patch_type: 'add_content', data: { text_delta: note } });
    Object.assign(entry, {
      summary_preview: note,
      tokens_after: tokensAfter,
      saved_ratio: Math.max(0, Math.min(1, Math.round((1 - tokensAfter / Math.max(1, before)) * 1000) / 1000)),
    });
    await state.endTurn(entry, 'completed');
    return entry;
  }

  /**
   * Summarise with the model, streamed as a system turn of kind `compaction` in the run's events.
   * Returns the finished entry (failure_reason set when the model failed or nothing was saved).
   */
  async run(state: RunState, trigger: Trigger, plan: Extract<Plan, { archived: StoredTurn[] }>): Promise<Turn> {
    const stored = await this.d.stored(state.sessionId);
    const before = messagesTokens(toModelMessages(stored));
    const prev = lastCompaction(stored);
    const entry = state.newTurn('system', 'root', null, 'streaming');
    Object.assign(entry, { kind: 'compaction', compaction_id: newId('cmp'), trigger, archived_count: plan.archived.length, tokens_before: before });
    const t0 = performance.now();
    await state.startTurn(entry);
    let summary = '';
    const call = this.observe(state, entry);
    try {
      const messages: ModelMessage[] = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: transcript(plan.archived, prev?.summary_full ?? null) },
      ];
      // The user's own keys pay for their summaries too (model.credentials), else the install's.
      const credentials = this.d.hooks?.has('model.credentials') ? await this.d.hooks.call('model.credentials', { run: state.info, model: state.model }) : undefined;
      for await (const d of this.d.model.stream({ model: state.model, messages, signal: state.signal, ...(credentials?.size ? { credentials } : {}) })) {
        call.delta(d);
        if (d.type !== 'text') continue;
        summary += d.text;
        state.patch(entry, { patch_type: 'add_content', data: { text_delta: d.text } });
      }
      call.end('ok');
      if (!summary.trim()) throw new Error('the model wrote no summary');
      const tasks = (await this.d.tasks(state.sessionId)).filter((t) => t.status !== 'completed');
      const full = tasks.length ? `${summary.trim()}\n\nOpen tasks (verbatim):\n${tasks.map((t) => `- [${t.status}] #${t.id} ${t.subject}${t.description ? `: ${t.description}` : ''}`).join('\n')}` : summary.trim();
      Object.assign(entry, { summary_full: full, summary_preview: full.slice(0, 300), archived_until: plan.cut });
      const after = messagesTokens(toModelMessages([...stored, { turn: entry, content: null }]));
      Object.assign(entry, { tokens_after: after, saved_ratio: Math.max(0, Math.min(1, Math.round((1 - after / Math.max(1, before)) * 1000) / 1000)) });
      // A summary that does not make the context smaller is no compaction: recorded, not used, not retried.
      if (after >= before) entry.failure_reason = `the summary did not shrink the context (${before} -> ${after} tokens)`;
      await state.endTurn(entry, 'completed', t0);
    } catch (e) {
      call.end(state.signal.aborted ? 'aborted' : 'error', e);
      Object.assign(entry, { failure_reason: state.signal.aborted ? 'stopped' : `summary failed: ${(e as Error).message.slice(0, 300)}`, tokens_after: before, saved_ratio: 0 });
      await state.endTurn(entry, state.signal.aborted ? 'interrupted' : 'failed', t0);
      if (state.signal.aborted) throw e;
    }
    return entry;
  }

  /**
   * The summary's model call, told to `model.call` once (purpose `compaction`) so that it is
   * recorded and counted like any other: a compaction costs tokens too. Its usage is the entry's.
   */
  private observe(state: RunState, entry: Turn) {
    const startedAt = new Date();
    const t0 = performance.now();
    let ttftMs: number | null = null;
    let model = state.model;
    let attempts = 1;
    let fallbackFrom: string | undefined;
    let credential: 'personal' | 'install' = 'install';
    let cached = 0;
    let estimated = false;
    let done = false;
    return {
      delta: (d: ModelDelta) => {
        if (d.type === 'model') {
          ({ model, attempts, fallback_from: fallbackFrom } = d);
          credential = d.credential ?? 'install';
          return;
        }
        ttftMs ??= performance.now() - t0;
        if (d.type === 'usage') {
          cached = d.cached_input_tokens ?? 0;
          estimated = !!d.estimated;
          state.patch(entry, { patch_type: 'usage', data: { input_tokens: d.input_tokens, output_tokens: d.output_tokens } });
        }
      },
      end: (outcome: 'ok' | 'error' | 'aborted', e?: unknown) => {
        if (done) return;
        done = true;
        if (e !== undefined) attempts = (e as { attempts?: number })?.attempts ?? attempts;
        entry.model = model;
        void this.d.hooks?.emit('model.call', {
          run: state.info,
          loopId: entry.loop_id,
          turnId: entry.turn_id,
          model,
          outcome,
          purpose: 'compaction',
          credential,
          usage: { ...entry.usage },
          startedAt,
          durationMs: performance.now() - t0,
          ttftMs,
          error: e === undefined ? undefined : ((e as Error)?.message ?? String(e)),
          cachedInputTokens: cached,
          estimated,
          attempts,
          fallbackFrom,
        });
      },
    };
  }
}
