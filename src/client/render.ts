import type { Turn } from './api.js';
import type { ServerEvent } from './stream.js';
import { ansi, clean, type Output, plain, type Style, styleFor } from './style.js';

/**
 * Renders a session's events (or its stored turns) to a terminal: text as it arrives, thinking
 * dimmed, each tool call on one line (name, key argument) with its result on the next (status,
 * duration, output folded to a few lines), sub-agent turns indented under their fork call.
 * Append-only, so the same output reads well in a terminal and in a pipe (then without ANSI).
 */

const KEY_ARG: Record<string, string[]> = {
  Bash: ['command'],
  Read: ['file_path'],
  Write: ['file_path'],
  Edit: ['file_path'],
  Glob: ['pattern'],
  Grep: ['pattern'],
  WebFetch: ['url'],
  WebSearch: ['query'],
  Agent: ['description', 'prompt'],
  TaskCreate: ['subject'],
};

/** The one argument that says what a call does, cut to `max` characters on one line. */
export function keyArgument(tool: string, args: string, max = 60): string {
  let parsed: Record<string, unknown> = {};
  try {
    const p = JSON.parse(args || '{}');
    if (p && typeof p === 'object' && !Array.isArray(p)) parsed = p;
  } catch {
    return short(args, max);
  }
  if (tool === 'AskUserQuestion') {
    const qs = parsed.questions as { question?: string }[] | undefined;
    return short(qs?.[0]?.question ?? '', max);
  }
  const names = KEY_ARG[tool] ?? Object.keys(parsed);
  for (const n of names) if (typeof parsed[n] === 'string' && parsed[n]) return short(parsed[n] as string, max);
  return '';
}

function short(s: string, max: number): string {
  const one = clean(s.replace(/\s+/g, ' ').trim());
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

export function resultText(result: unknown): string {
  if (result === null || result === undefined) return '';
  return clean(typeof result === 'string' ? result : JSON.stringify(result));
}

export function seconds(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  return ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`;
}

export interface RendererOptions {
  /** Output lines shown per tool result before folding (default 4 on a terminal, 2 piped). */
  foldLines?: number;
  /** Print user turns (history); live user turns are what the person just typed. */
  showUserTurns?: boolean;
  /** Force ANSI on or off (default: on a terminal unless NO_COLOR is set). */
  color?: boolean;
}

export class Renderer {
  readonly s: Style;
  private atLineStart = true;
  /** Which stream the last characters belonged to, to break lines between turns and kinds. */
  private lastKey = '';
  private depthOfTurn = new Map<string, number>();
  private depthOfCall = new Map<string, number>();
  private calls = new Map<string, { name: string; args: string }>();
  private readonly fold: number;

  constructor(
    private readonly out: Output,
    private readonly opts: RendererOptions = {},
  ) {
    this.s = opts.color === undefined ? styleFor(out) : opts.color ? ansi : plain;
    this.fold = opts.foldLines ?? (out.isTTY ? 4 : 2);
  }

  private indent(depth: number) {
    return depth > 0 ? this.s.gray('│ '.repeat(depth)) : '';
  }

  /** Write text that may span lines, indenting each new line to `depth`. */
  private text(t: string, depth: number, paint: (x: string) => string = (x) => x) {
    const parts = t.split('\n');
    parts.forEach((p, i) => {
      if (i > 0) {
        this.out.write('\n');
        this.atLineStart = true;
      }
      if (!p) return;
      if (this.atLineStart) this.out.write(this.indent(depth));
      this.out.write(paint(p));
      this.atLineStart = false;
    });
  }

  /** Finish the current line, if any. */
  newline() {
    if (!this.atLineStart) {
      this.out.write('\n');
      this.atLineStart = true;
    }
  }

  /** A whole line of our own (status, tool call), on its own line. */
  line(t: string, depth = 0) {
    this.newline();
    this.out.write(`${this.indent(depth)}${t}\n`);
    this.lastKey = '';
  }

  private switchTo(key: string) {
    if (this.lastKey && this.lastKey !== key) this.newline();
    this.lastKey = key;
  }

  private depth(turnId: string) {
    return this.depthOfTurn.get(turnId) ?? 0;
  }

  /** Apply one server event. */
  event(e: ServerEvent) {
    const p = e.payload;
    switch (e.name) {
      case 'turn:start': {
        const parent = p.parent_fork_tool_call_id as string | null;
        this.depthOfTurn.set(p.turn_id, parent ? (this.depthOfCall.get(parent) ?? 0) + 1 : 0);
        if (p.role === 'assistant') this.switchTo(`turn:${p.turn_id}`);
        return;
      }
      case 'turn:patch':
        return this.patch(p.turn_id, p.patch_type, p.data ?? {});
      case 'turn:end': {
        if (p.turn?.role === 'user') {
          if (this.opts.showUserTurns) this.userTurn(p.turn as Turn);
          return;
        }
        if (p.status === 'interrupted' || p.status === 'failed') this.line(this.s.yellow(`[turn ${p.status}]`), this.depth(p.turn_id));
        return;
      }
      case 'chat:end': {
        this.newline();
        this.lastKey = '';
        if (p.status !== 'completed') this.line(this.s.yellow(`[chat ${p.status}${p.finish_reason ? `: ${p.finish_reason}` : ''}]`));
        else if (p.finish_reason === 'max_turns') this.line(this.s.yellow('[stopped: too many model calls in one run]'));
        return;
      }
      case 'system:error':
        this.line(this.s.red(`error: ${clean(String(p.message ?? p.code ?? 'unknown error'))}`));
        return;
      case 'session:resync':
        this.line(this.s.gray(`[reconnected after a long gap: the conversation was reloaded (${(p.turns ?? []).length} turns)]`));
        return;
    }
  }

  patch(turnId: string, type: string, d: Record<string, unknown>) {
    const depth = this.depth(turnId);
    switch (type) {
      case 'add_content':
        this.switchTo(`text:${turnId}`);
        this.text(clean(String(d.text_delta ?? '')), depth);
        return;
      case 'add_thinking':
        this.switchTo(`thinking:${turnId}`);
        this.text(clean(String(d.text_delta ?? '')), depth, (x) => this.s.dim(x));
        return;
      case 'add_tool_call': {
        const id = String(d.id);
        const name = String(d.tool_name ?? '');
        this.calls.set(id, { name, args: String(d.arguments ?? '') });
        this.depthOfCall.set(id, depth);
        const arg = keyArgument(name, String(d.arguments ?? ''), Math.max(20, (this.out.columns ?? 100) - 30 - depth * 2));
        const mark = d.status === 'awaiting_answer' ? this.s.yellow('?') : this.s.cyan('●');
        this.line(`${mark} ${this.s.bold(name)}${arg ? this.s.gray(`(${arg})`) : ''}`, depth);
        return;
      }
      case 'tool_result':
        this.toolResult(String(d.tool_call_id), String(d.status ?? ''), d.result, d.duration_ms as number | null, depth);
        return;
    }
  }

  private toolResult(callId: string, status: string, result: unknown, ms: number | null, fallbackDepth: number) {
    const depth = this.depthOfCall.get(callId) ?? fallbackDepth;
    const lines = resultText(result).replace(/\n+$/, '').split('\n');
    const empty = lines.length === 1 && !lines[0];
    const paint = status === 'done' ? this.s.green : status === 'error' ? this.s.red : this.s.yellow;
    const head = `${paint(status || 'done')}${ms ? this.s.gray(` ${seconds(ms)}`) : ''}`;
    const width = Math.max(20, (this.out.columns ?? 100) - 8 - depth * 2);
    const shown = empty ? [] : lines.slice(0, this.fold).map((l) => short(l, width));
    const more = empty ? 0 : lines.length - shown.length;
    this.line(`  ${this.s.gray('└')} ${head}${shown.length ? ` ${this.s.gray('·')} ${shown[0]}` : ''}`, depth);
    for (const l of shown.slice(1)) this.line(`    ${l}`, depth);
    if (more > 0 && shown.length) this.line(this.s.gray(`    … +${more} line${more === 1 ? '' : 's'}`), depth);
  }

  private userTurn(turn: Turn) {
    const text = turn.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('');
    if (text) this.line(`${this.s.bold(this.s.cyan('>'))} ${clean(text).replace(/\n/g, '\n  ')}`, this.depthOfTurn.get(turn.turn_id) ?? 0);
  }

  /** Render stored turns (GET .../messages) the way their events were rendered live. */
  turns(all: Turn[]) {
    const children = new Map<string, Turn[]>();
    for (const t of all) {
      if (!t.parent_fork_tool_call_id) continue;
      const list = children.get(t.parent_fork_tool_call_id) ?? [];
      list.push(t);
      children.set(t.parent_fork_tool_call_id, list);
    }
    const shown = new Set<string>();
    const one = (t: Turn, depth: number) => {
      if (shown.has(t.turn_id)) return;
      shown.add(t.turn_id);
      this.depthOfTurn.set(t.turn_id, depth);
      if (t.kind === 'compaction') return this.line(this.s.gray(`[context compacted${t.summary_preview ? `: ${short(String(t.summary_preview), 60)}` : ''}]`), depth);
      if (t.role === 'user') return this.userTurn(t);
      if (t.role !== 'assistant') return;
      this.switchTo(`turn:${t.turn_id}`);
      for (const b of t.blocks) {
        const call = b.tool_call_id ? t.tool_calls.find((c) => c.id === b.tool_call_id) : undefined;
        if (b.type === 'text') this.patch(t.turn_id, 'add_content', { text_delta: b.content });
        else if (b.type === 'thinking') this.patch(t.turn_id, 'add_thinking', { text_delta: b.content });
        else if (b.type === 'tool_use' && call) {
          this.patch(t.turn_id, 'add_tool_call', { ...call });
          for (const child of children.get(call.id) ?? []) one(child, depth + 1);
        } else if (b.type === 'tool_result' && call) this.toolResult(call.id, call.status, call.result, call.duration_ms, depth);
      }
      this.newline();
      this.lastKey = '';
      if (t.status === 'interrupted' || t.status === 'failed') this.line(this.s.yellow(`[turn ${t.status}]`), depth);
    };
    for (const t of all) if (!t.parent_fork_tool_call_id) one(t, 0);
    // Sub-agent turns whose fork call is not in the list (cut history): shown at the end, indented.
    for (const t of all) one(t, 1);
  }
}
