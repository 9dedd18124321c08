import type { MarkdownTheme } from '@mariozechner/pi-tui';
import type { Turn } from './api.js';
import { fileChange } from './diff.js';
import { keyArgument, resultText, seconds, short } from './format.js';
import { MarkdownBlocks, markdownLines, markdownTheme } from './markdown.js';
import type { Payload, SessionEventName } from '../../core/events/protocol.js';
import type { ServerEvent } from './stream.js';
import { ansi, clean, type Output, plain, type Style, styleFor } from './style.js';

export { keyArgument, resultText, seconds } from './format.js';

/**
 * Renders a session's events (or its stored turns) to a terminal: text as it arrives (markdown on
 * a terminal, block by block as each completes), thinking dimmed, each tool call on one line (name,
 * key argument) with its result on the next (status, duration, output folded to a few lines).
 * A sub-agent's turns are written to a block of their own, labelled by its description, printed
 * whole under its `Agent` call when its result comes: parallel sub-agents never interleave.
 * Append-only, so the same output reads well in a terminal and in a pipe (then without ANSI).
 */

export interface RendererOptions {
  /** Output lines shown per tool result before folding (default 4 on a terminal, 2 piped). */
  foldLines?: number;
  /** Print user turns (history); live user turns are what the person just typed. */
  showUserTurns?: boolean;
  /** Force ANSI on or off (default: on a terminal unless NO_COLOR is set). */
  color?: boolean;
  /** Render answers as markdown (default: when the output is a terminal). */
  markdown?: boolean;
  /** Said after a fold's "… +N lines" (the full-screen client's expand key). */
  expandHint?: string;
}

/** Where each turn and call of a run is printed, shared by a renderer and its sub-agent blocks. */
interface Routes {
  turns: Map<string, Renderer>;
  calls: Map<string, Renderer>;
  /** Sub-agent blocks by their fork call, not yet printed (in the order they started). */
  forks: Map<string, { block: Renderer; sink: Buffered; owner: Renderer; label: string }>;
  /** The last tool result printed folded: its tool and every line, for the expand key. */
  folded?: { tool: string; lines: string[] };
}

class Buffered implements Output {
  text = '';
  constructor(
    readonly isTTY: boolean | undefined,
    readonly columns: number | undefined,
  ) {}
  write(s: string) {
    this.text += s;
  }
}

export class Renderer {
  readonly s: Style;
  private atLineStart = true;
  /** Which stream the last characters belonged to, to break lines between turns and kinds. */
  private lastKey = '';
  private calls = new Map<string, { name: string; args: string }>();
  private readonly fold: number;
  private readonly theme: MarkdownTheme | null;
  /** The answer being streamed as markdown: complete blocks are printed, the tail waits. */
  private md: { turnId: string; blocks: MarkdownBlocks; printed: boolean } | null = null;
  private readonly routes: Routes;

  constructor(
    private readonly out: Output,
    private readonly opts: RendererOptions = {},
    private readonly depth = 0,
    routes?: Routes,
  ) {
    this.s = opts.color === undefined ? styleFor(out) : opts.color ? ansi : plain;
    this.fold = opts.foldLines ?? (out.isTTY ? 4 : 2);
    const markdown = opts.markdown ?? Boolean(out.isTTY);
    this.theme = markdown ? markdownTheme(this.s, this.s === ansi) : null;
    this.routes = routes ?? { turns: new Map(), calls: new Map(), forks: new Map() };
  }

  private indent(depth = this.depth) {
    return depth > 0 ? this.s.gray('│ '.repeat(depth)) : '';
  }

  /** Write text that may span lines, indenting each new line. */
  private text(t: string, paint: (x: string) => string = (x) => x) {
    const parts = t.split('\n');
    parts.forEach((p, i) => {
      if (i > 0) {
        this.out.write('\n');
        this.atLineStart = true;
      }
      if (!p) return;
      if (this.atLineStart) this.out.write(this.indent());
      this.out.write(paint(p));
      this.atLineStart = false;
    });
  }

  /** Finish the current line (and the markdown block streaming into it), if any. */
  newline() {
    this.endMarkdown();
    if (!this.atLineStart) {
      this.out.write('\n');
      this.atLineStart = true;
    }
  }

  /** A whole line of our own (status, tool call), on its own line. */
  line(t: string, depth = this.depth) {
    this.newline();
    this.out.write(`${this.indent(depth)}${t}\n`);
    this.lastKey = '';
  }

  private switchTo(key: string) {
    if (this.lastKey && this.lastKey !== key) this.newline();
    this.lastKey = key;
  }

  /** Markdown of the answer streaming now that is not a whole block yet (the live view shows it raw). */
  get pendingMarkdown(): string {
    return this.md?.blocks.tail ?? '';
  }

  /** A turn printed by this renderer itself (not by a sub-agent's block). */
  ownsTurn(turnId: string): boolean {
    return this.owner(turnId) === this;
  }

  /** Descriptions of the sub-agents still working. */
  get workingAgents(): string[] {
    return [...this.routes.forks.values()].map((f) => f.label);
  }

  /** Blocks of one answer, rendered apart, are set off by one blank line, as in one rendering. */
  private printMarkdown(text: string, md: NonNullable<Renderer['md']>) {
    if (!this.theme || !text.trim()) return;
    const width = (this.out.columns ?? 100) - this.depth * 2 - 1;
    const lines = markdownLines(text, width, this.theme);
    while (lines.length && !lines[0]) lines.shift();
    while (lines.length && !lines[lines.length - 1]) lines.pop();
    if (!this.atLineStart) this.out.write('\n');
    if (md.printed) this.out.write(`${this.indent()}\n`);
    for (const l of lines) this.out.write(`${this.indent()}${l}\n`);
    this.atLineStart = true;
    md.printed = true;
  }

  private endMarkdown() {
    const md = this.md;
    if (!md) return;
    this.md = null;
    this.printMarkdown(md.blocks.end(), md);
  }

  /**
   * How the terminal shows each server event of a session: one entry per event of the catalogue,
   * so a new event is a compile error here until it is given one (test/architecture/client-events.test.ts
   * compares the keys with the catalogue too).
   */
  static readonly handlers: { [N in SessionEventName]: (r: Renderer, p: Payload<N>) => void } = {
    // Nothing to print: the person's own line starts the run.
    'chat:start': () => {},
    'turn:start': (r, p) => r.turnStart(p.turn_id, p.role, p.parent_fork_tool_call_id),
    'turn:patch': (r, p) => r.owner(p.turn_id).patch(p.turn_id, p.patch_type, p.data),
    'turn:end': (r, p) => r.turnEnd(p.turn_id, p.status, p.turn as Turn),
    'chat:end': (r, p) => {
      // Sub-agents cut short (a stop, a failure) print what they had, innermost first.
      for (const id of [...r.routes.forks.keys()].reverse()) r.flushFork(id);
      r.newline();
      r.lastKey = '';
      if (p.status !== 'completed') r.line(r.s.yellow(`[chat ${p.status}${p.finish_reason ? `: ${p.finish_reason}` : ''}]`));
      else if (p.finish_reason === 'max_turns') r.line(r.s.yellow('[stopped: too many model calls in one run]'));
    },
    'system:error': (r, p) => r.line(r.s.red(`error: ${clean(String(p.message || p.code || 'unknown error'))}`)),
    // Something to know that ends nothing (a budget past 80%): its own line, the run goes on.
    'system:notice': (r, p) => r.line(r.s.yellow(`notice: ${clean(String(p.message || p.code))}`)),
    'session:resync': (r, p) => r.line(r.s.gray(`[reconnected after a long gap: the conversation was reloaded (${p.turns.length} turns)]`)),
    // The subscription ended (the session was deleted, or this user left its team workspace): nothing more comes.
    'session:closed': (r, p) => r.line(r.s.gray(`[the session is no longer readable: ${clean(p.message || p.code)}; nothing more of it will be shown]`)),
  };

  /** Apply one server event. */
  event(e: ServerEvent) {
    (Renderer.handlers[e.name] as (r: Renderer, p: ServerEvent['payload']) => void)(this, e.payload);
  }

  private turnStart(turnId: string, role: string, parent: string | null) {
    const r = parent ? this.forkBlock(parent) : this;
    this.routes.turns.set(turnId, r);
    if (role === 'assistant') r.switchTo(`turn:${turnId}`);
  }

  private turnEnd(turnId: string, status: string, turn?: Turn) {
    const r = this.owner(turnId);
    if (turn?.role === 'user') {
      if (this.opts.showUserTurns) r.userTurn(turn);
      return;
    }
    r.endMarkdown();
    if (status === 'interrupted' || status === 'failed') r.line(this.s.yellow(`[turn ${status}]`));
  }

  private owner(turnId: string): Renderer {
    return this.routes.turns.get(turnId) ?? this;
  }

  /** The block a sub-agent started by call `callId` writes to, made at its first turn. */
  private forkBlock(callId: string): Renderer {
    const known = this.routes.forks.get(callId);
    if (known) return known.block;
    const owner = this.routes.calls.get(callId) ?? this;
    const call = owner.calls.get(callId);
    const label = call ? keyArgument(call.name, call.args, 60) || call.name : 'sub-agent';
    const sink = new Buffered(this.out.isTTY, this.out.columns);
    const block = new Renderer(sink, { ...this.opts, color: this.s === ansi }, owner.depth + 1, this.routes);
    block.line(this.s.bold(this.s.cyan(label)));
    this.routes.forks.set(callId, { block, sink, owner, label });
    return block;
  }

  /** Print a sub-agent's block into its owner, whole. */
  private flushFork(callId: string) {
    const f = this.routes.forks.get(callId);
    if (!f) return;
    this.routes.forks.delete(callId);
    f.block.newline();
    f.owner.newline();
    f.owner.out.write(f.sink.text);
    f.owner.lastKey = '';
  }

  patch(turnId: string, type: string, d: Readonly<Record<string, unknown>>) {
    switch (type) {
      case 'add_content': {
        this.switchTo(`text:${turnId}`);
        const delta = clean(String(d.text_delta ?? ''));
        if (!this.theme) return this.text(delta);
        if (!this.md) this.md = { turnId, blocks: new MarkdownBlocks(), printed: false };
        this.printMarkdown(this.md.blocks.push(delta), this.md);
        return;
      }
      case 'add_thinking':
        this.switchTo(`thinking:${turnId}`);
        this.text(clean(String(d.text_delta ?? '')), (x) => this.s.dim(x));
        return;
      case 'add_tool_call': {
        const id = String(d.id);
        const name = String(d.tool_name ?? '');
        this.calls.set(id, { name, args: String(d.arguments ?? '') });
        this.routes.calls.set(id, this);
        const arg = keyArgument(name, String(d.arguments ?? ''), Math.max(20, (this.out.columns ?? 100) - 30 - this.depth * 2));
        const mark = d.status === 'awaiting_answer' ? this.s.yellow('?') : this.s.cyan('●');
        this.line(`${mark} ${this.s.bold(name)}${arg ? this.s.gray(`(${arg})`) : ''}`);
        return;
      }
      case 'tool_result': {
        const id = String(d.tool_call_id);
        (this.routes.calls.get(id) ?? this).toolResult(id, String(d.status ?? ''), d.result, d.duration_ms as number | null);
        return;
      }
    }
  }

  private toolResult(callId: string, status: string, result: unknown, ms: number | null) {
    const label = this.routes.forks.get(callId)?.label;
    this.flushFork(callId);
    const lines = resultText(result).replace(/\n+$/, '').split('\n');
    const empty = lines.length === 1 && !lines[0];
    const paint = status === 'done' ? this.s.green : status === 'error' ? this.s.red : this.s.yellow;
    // A sub-agent's result names its agent: several may finish in any order.
    const head = `${label ? `${this.s.bold(label)} · ` : ''}${paint(status || 'done')}${ms ? this.s.gray(` ${seconds(ms)}`) : ''}`;
    const width = Math.max(20, (this.out.columns ?? 100) - 8 - this.depth * 2);
    const shown = empty ? [] : lines.slice(0, this.fold).map((l) => short(l, width));
    const more = empty ? 0 : lines.length - shown.length;
    // An Edit or Write that went through shows what it changed.
    const call = this.calls.get(callId);
    const change = status === 'done' && call ? fileChange(call.name, call.args, this.s, width, this.fold * 3) : null;
    this.line(`  ${this.s.gray('└')} ${head}${shown.length ? ` ${this.s.gray('·')} ${shown[0]}` : ''}${change ? ` ${this.s.gray('·')} ${change.summary}` : ''}`);
    for (const l of shown.slice(1)) this.line(`    ${l}`);
    if (more > 0 && shown.length) {
      this.routes.folded = { tool: call?.name ?? 'the tool', lines };
      this.line(this.s.gray(`    … +${more} line${more === 1 ? '' : 's'}${this.opts.expandHint ? ` (${this.opts.expandHint})` : ''}`));
    }
    for (const l of change?.lines ?? []) this.line(`    ${l}`);
  }

  private userTurn(turn: Turn) {
    const text = turn.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('');
    if (text) this.line(`${this.s.bold(this.s.cyan('>'))} ${clean(text).replace(/\n/g, '\n  ')}`);
  }

  /** The last folded tool result, whole (the expand key); null when none was folded. */
  expandLast(): boolean {
    const f = this.routes.folded;
    if (!f) return false;
    this.line(this.s.gray(`  ${f.tool} output, all ${f.lines.length} lines:`));
    for (const l of f.lines) this.line(`    ${clean(l)}`);
    return true;
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
    const one = (t: Turn) => {
      if (shown.has(t.turn_id)) return;
      shown.add(t.turn_id);
      const r = t.parent_fork_tool_call_id ? this.forkBlock(t.parent_fork_tool_call_id) : this;
      this.routes.turns.set(t.turn_id, r);
      if (t.kind === 'compaction') return r.line(this.s.gray(`[context compacted${t.summary_preview ? `: ${short(String(t.summary_preview), 60)}` : ''}]`));
      if (t.role === 'user') return r.userTurn(t);
      if (t.role !== 'assistant') return;
      this.turnStart(t.turn_id, 'assistant', t.parent_fork_tool_call_id);
      const patch = (type: string, data: Record<string, unknown>) => this.owner(t.turn_id).patch(t.turn_id, type, data);
      for (const b of t.blocks) {
        const call = b.tool_call_id ? t.tool_calls.find((c) => c.id === b.tool_call_id) : undefined;
        if (b.type === 'text') patch('add_content', { text_delta: b.content });
        else if (b.type === 'thinking') patch('add_thinking', { text_delta: b.content });
        else if (b.type === 'tool_use' && call) {
          patch('add_tool_call', { ...call });
          for (const child of children.get(call.id) ?? []) one(child);
        } else if (b.type === 'tool_result' && call) patch('tool_result', { tool_call_id: call.id, status: call.status, result: call.result, duration_ms: call.duration_ms });
      }
      r.newline();
      r.lastKey = '';
      this.turnEnd(t.turn_id, t.status);
    };
    for (const t of all) if (!t.parent_fork_tool_call_id) one(t);
    // Sub-agent turns whose fork call is not in the list (cut history): shown at the end.
    for (const t of all) one(t);
    for (const id of [...this.routes.forks.keys()].reverse()) this.flushFork(id);
  }
}
