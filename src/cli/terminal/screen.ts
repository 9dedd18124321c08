import { CombinedAutocompleteProvider, type Component, Editor, matchesKey, ProcessTerminal, TUI, truncateToWidth, wrapTextWithAnsi } from '@mariozechner/pi-tui';
import type { Output, Style } from './style.js';

/**
 * The interactive chat's terminal, on pi-tui: the conversation (append-only, what the Renderer
 * writes), below it the answer block still streaming, a spinner while the model or a tool works,
 * the queued messages, and the editor (multi-line, bracketed paste, history, slash completion).
 * pi-tui redraws only the lines that changed, at most once per frame, so typing stays responsive
 * while an answer streams.
 */

/** The conversation: lines written by the Renderer, wrapped to the width once per line. */
class Transcript implements Component, Output {
  readonly isTTY = true;
  private lines: string[] = [];
  private partial = '';
  private wrapped: string[] = [];
  private wrappedUpTo = 0;
  private width = 0;

  constructor(private readonly tui: TUI) {}

  get columns() {
    return this.tui.terminal.columns;
  }

  write(s: string) {
    const parts = (this.partial + s).split('\n');
    this.partial = parts.pop() ?? '';
    for (const p of parts) this.lines.push(p);
    this.tui.requestRender();
  }

  clear() {
    this.lines = [];
    this.partial = '';
    this.wrapped = [];
    this.wrappedUpTo = 0;
  }

  render(width: number): string[] {
    if (width !== this.width) {
      this.width = width;
      this.wrapped = [];
      this.wrappedUpTo = 0;
    }
    for (; this.wrappedUpTo < this.lines.length; this.wrappedUpTo++) for (const l of wrapLine(this.lines[this.wrappedUpTo], width)) this.wrapped.push(l);
    return this.partial ? [...this.wrapped, ...wrapLine(this.partial, width)] : this.wrapped;
  }

  invalidate() {}
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escapes is the point
const ANSI = /\x1b\[[0-9;]*m/g;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * A transcript line wrapped to `width`. Most lines already fit (markdown comes wrapped to the
 * width): printable ASCII under its styling is one column a character, so those skip pi-tui's
 * grapheme-by-grapheme wrap, which was half the time of showing a 1,000-turn session.
 */
export function wrapLine(line: string, width: number): string[] {
  if (!line) return [''];
  if (line.length <= width && PRINTABLE_ASCII.test(line)) return [line];
  const bare = line.includes('\x1b') ? line.replace(ANSI, '') : line;
  if (bare.length <= width && PRINTABLE_ASCII.test(bare)) return [line];
  return wrapTextWithAnsi(line, width);
}

/** Text shown live under the conversation (the block streaming now; the queue). */
class Lines implements Component {
  constructor(private readonly get: () => string[]) {}
  render(width: number): string[] {
    return this.get().flatMap((l) => wrapLine(l, width));
  }
  invalidate() {}
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** One line: a spinner frame and what works, or nothing. Never padded to the full width. */
class Spinner implements Component {
  text: (() => string) | null = null;
  frame = 0;
  constructor(private readonly s: Style) {}
  render(width: number): string[] {
    if (!this.text) return [];
    return ['', truncateToWidth(`${this.s.cyan(FRAMES[this.frame % FRAMES.length])} ${this.s.gray(this.text())}`, Math.max(1, width - 1))];
  }
  invalidate() {}
}

export interface ScreenHandlers {
  submit(text: string): void;
  /** Ctrl-C (the editor is emptied first when it holds a draft: that press is not passed on). */
  interrupt(): void;
  /** Esc; true when it was used (a run stopped), false to let the editor have it. */
  escape(): boolean;
  /** Ctrl-D on an empty editor. */
  eof(): void;
  /** Ctrl-O: show the last folded tool output whole. */
  expand(): void;
}

/** The key that expands folded tool output (Claude Code's). */
export const EXPAND_KEY = 'Ctrl-O';

export class ChatScreen {
  readonly tui: TUI;
  readonly transcript: Transcript;
  readonly editor: Editor;
  private readonly spinner: Spinner;
  private ticker: NodeJS.Timeout | null = null;

  constructor(
    s: Style,
    live: () => string[],
    queued: () => string[],
    commands: { name: string; description: string }[],
    private readonly on: ScreenHandlers,
  ) {
    this.tui = new TUI(new ProcessTerminal());
    this.transcript = new Transcript(this.tui);
    this.spinner = new Spinner(s);
    const gray = (x: string) => s.gray(x);
    this.editor = new Editor(this.tui, {
      borderColor: gray,
      selectList: { selectedPrefix: (x) => s.cyan(x), selectedText: (x) => s.bold(x), description: gray, scrollInfo: gray, noMatch: gray },
    });
    this.editor.setAutocompleteProvider(new CombinedAutocompleteProvider(commands, process.cwd()));
    this.editor.onSubmit = (text) => {
      if (text.trim()) this.editor.addToHistory(text);
      this.on.submit(text);
    };
    this.tui.addChild(this.transcript);
    this.tui.addChild(new Lines(live));
    this.tui.addChild(this.spinner);
    this.tui.addChild(new Lines(queued));
    this.tui.addChild(new Lines(() => (this.hintText ? [this.hintText] : [])));
    this.tui.addChild(
      new Lines(() =>
        this.picker ? [`${s.cyan('❯')} ${this.picker.index + 1}. ${this.picker.choices[this.picker.index]}  ${s.gray(`↑↓ to choose, Enter to pick${this.picker.cancel ? ', Esc to leave it' : ''} (or type)`)}`] : [],
      ),
    );
    this.tui.addChild(this.editor);
    this.tui.setFocus(this.editor);
    // Raw mode: Ctrl-C and Ctrl-D arrive as keys, not signals.
    this.tui.addInputListener((data) => {
      if (matchesKey(data, 'ctrl+c')) {
        // A draft is cleared (kept in the history, so ↑ brings it back); only an empty editor stops or exits.
        if (this.editor.getText()) {
          this.editor.addToHistory(this.editor.getText());
          this.editor.setText('');
          this.tui.requestRender();
        } else this.on.interrupt();
        return { consume: true };
      }
      // A picker: the arrows move it and Enter picks while the editor is empty (typing still answers).
      if (this.picker && !this.editor.getText()) {
        const p = this.picker;
        const step = matchesKey(data, 'up') ? -1 : matchesKey(data, 'down') ? 1 : 0;
        if (step) {
          p.index = (p.index + step + p.choices.length) % p.choices.length;
          this.tui.requestRender();
          return { consume: true };
        }
        if (matchesKey(data, 'enter')) {
          this.on.submit(String(p.index + 1));
          return { consume: true };
        }
        // A menu of a slash command (/resume, /rewind) is left with Esc: an empty answer.
        if (p.cancel && matchesKey(data, 'escape')) {
          this.on.submit('');
          return { consume: true };
        }
      }
      if (matchesKey(data, 'ctrl+o')) {
        this.on.expand();
        return { consume: true };
      }
      if (matchesKey(data, 'escape') && !this.editor.isShowingAutocomplete() && this.on.escape()) return { consume: true };
      if (matchesKey(data, 'ctrl+d') && !this.editor.getText()) {
        this.on.eof();
        return { consume: true };
      }
      return undefined;
    });
  }

  start() {
    this.tui.start();
  }

  /** Spinner with the time since `since` and what is working; null hides it. */
  working(what: (() => string) | null) {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    this.spinner.text = null;
    if (what) {
      const since = Date.now();
      this.spinner.text = () => `${what()} ${Math.floor((Date.now() - since) / 1000)}s · Esc to stop`;
      this.ticker = setInterval(() => {
        this.spinner.frame++;
        this.tui.requestRender();
      }, 100);
    }
    this.tui.requestRender();
  }

  refresh() {
    this.tui.requestRender();
  }

  private hintText = '';
  private picker: { choices: string[]; index: number; cancel: boolean } | null = null;

  /**
   * Arrow-key choice among `choices` (numbered from 1) for the next answer; null removes it.
   * `cancel`: Esc answers an empty line (a menu that can be left, as /resume's).
   */
  pick(choices: string[] | null, cancel = false) {
    this.picker = choices ? { choices, index: 0, cancel } : null;
    this.tui.requestRender();
  }

  private hintTimer: NodeJS.Timeout | null = null;

  /** A line above the editor for `ms` (a Ctrl-C exit hint); `onEnd` runs when it goes. */
  hint(text: string, ms: number, onEnd: () => void) {
    if (this.hintTimer) clearTimeout(this.hintTimer);
    this.hintText = text;
    this.hintTimer = setTimeout(() => {
      this.hintTimer = null;
      this.hintText = '';
      onEnd();
      this.tui.requestRender();
    }, ms);
    this.tui.requestRender();
  }

  /** Put text in the editor, after what is there (queued messages an interrupt did not send). */
  restore(text: string) {
    const now = this.editor.getText();
    this.editor.setText(now ? `${now}\n${text}` : text);
    this.tui.requestRender();
  }

  /** Empty the conversation and redraw the screen from the top. */
  clear() {
    this.transcript.clear();
    this.tui.terminal.clearScreen();
    this.tui.requestRender(true);
  }

  stop() {
    if (this.hintTimer) clearTimeout(this.hintTimer);
    this.working(null);
    this.tui.stop();
  }
}
