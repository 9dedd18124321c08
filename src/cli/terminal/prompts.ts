import { type Component, CURSOR_MARKER, type Focusable, Input, matchesKey, ProcessTerminal, SelectList, TUI, wrapTextWithAnsi } from '@mariozechner/pi-tui';
import type { Style } from './style.js';

/**
 * Questions on a terminal for `agentsvc init`, on pi-tui (the chat client's terminal library):
 * arrow-key lists filtered by typing, text fields with a default, a masked field for secrets.
 * Answered questions stay on screen as one line each; Ctrl-C or Esc cancels (the promise answers
 * null). Only on a terminal: the command's flags are the way without one.
 */

export interface Choice {
  value: string;
  label: string;
  hint?: string;
}

/** Lines computed on each render. */
class Lines implements Component {
  constructor(private readonly get: () => string[]) {}
  render(width: number): string[] {
    return this.get().flatMap((l) => (l ? wrapTextWithAnsi(l, width) : ['']));
  }
  invalidate() {}
}

/**
 * A secret typed without echo: one `•` per character. Written here because pi-tui's Input has no
 * masked mode; it takes printable text (a paste too), Backspace, Ctrl-U and Enter.
 */
class MaskedInput implements Component, Focusable {
  focused = false;
  value = '';
  onSubmit?: (value: string) => void;
  handleInput(data: string) {
    if (matchesKey(data, 'enter')) return this.onSubmit?.(this.value);
    if (matchesKey(data, 'backspace')) this.value = [...this.value].slice(0, -1).join('');
    else if (matchesKey(data, 'ctrl+u')) this.value = '';
    else {
      // Bracketed paste markers and other escapes are not part of a key.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the paste markers begin with ESC
      const text = data.replace(/\x1b\[20[01]~/g, '');
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are not key text
      if (!/[\x00-\x1f\x7f]/.test(text)) this.value += text;
    }
  }
  render(): string[] {
    return [`> ${'•'.repeat([...this.value].length)}${this.focused ? CURSOR_MARKER : ''}`];
  }
  invalidate() {}
}

/** An arrow-key list whose items are filtered by what is typed; with `custom`, Enter on no match takes the typed text. */
class FilteredList implements Component, Focusable {
  focused = false;
  filter = '';
  private list!: SelectList;
  onPick?: (value: string) => void;

  constructor(
    private readonly choices: Choice[],
    private readonly s: Style,
    private readonly initial: string | undefined,
    private readonly custom: boolean,
  ) {
    this.rebuild();
  }

  private rebuild() {
    const f = this.filter.toLowerCase();
    const shown = this.choices.filter((c) => !f || c.label.toLowerCase().includes(f) || c.value.toLowerCase().includes(f));
    const gray = (x: string) => this.s.gray(x);
    this.list = new SelectList(
      shown.map((c) => ({ value: c.value, label: c.label, description: c.hint })),
      10,
      { selectedPrefix: (x) => this.s.cyan(x), selectedText: (x) => this.s.cyan(x), description: gray, scrollInfo: gray, noMatch: gray },
      { minPrimaryColumnWidth: 12, maxPrimaryColumnWidth: 40 },
    );
    const at = shown.findIndex((c) => c.value === this.initial);
    if (!f && at > 0) this.list.setSelectedIndex(at);
    this.list.onSelect = (item) => this.onPick?.(item.value);
  }

  handleInput(data: string) {
    if (matchesKey(data, 'enter') && this.custom && this.filter && !this.list.getSelectedItem()) return this.onPick?.(this.filter.trim());
    if (matchesKey(data, 'backspace')) {
      this.filter = [...this.filter].slice(0, -1).join('');
      return this.rebuild();
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a printable key extends the filter
    if (data.length >= 1 && !/[\x00-\x1f\x7f]/.test(data)) {
      this.filter += data;
      return this.rebuild();
    }
    this.list.handleInput(data);
  }

  render(width: number): string[] {
    const typed = this.filter ? `  ${this.s.gray('filter:')} ${this.filter}` : '';
    const help = this.s.gray(`  ↑↓ to move, Enter to choose${this.choices.length > 5 ? ', type to filter' : ''}${this.custom ? ' (or type a name of your own)' : ''}`);
    const rows = this.list.getSelectedItem() || !this.filter ? this.list.render(width) : [this.s.gray(this.custom ? `  no match: Enter takes "${this.filter.trim()}"` : '  no match')];
    return [...rows, ...(typed ? [typed] : []), help];
  }

  invalidate() {}
}

export class Prompts {
  private readonly tui: TUI;
  private readonly done: string[] = [];
  private question = '';
  private status = '';
  private active: Component | null = null;
  private cancel: (() => void) | null = null;

  constructor(private readonly s: Style) {
    this.tui = new TUI(new ProcessTerminal());
    this.tui.addChild(new Lines(() => this.done));
    this.tui.addChild(new Lines(() => [this.question, this.status].filter(Boolean)));
    // Raw mode: Ctrl-C arrives as a key; it cancels whatever is asked, as Esc does.
    this.tui.addInputListener((data) => {
      if (this.cancel && (matchesKey(data, 'ctrl+c') || matchesKey(data, 'escape'))) {
        this.cancel();
        return { consume: true };
      }
      return undefined;
    });
    this.tui.start();
  }

  /** A line kept above the questions. */
  note(line: string) {
    this.done.push(line);
    this.tui.requestRender();
  }

  /** A line under the current question (work in progress), replaced by the next one; '' removes it. */
  working(line: string) {
    this.status = line ? this.s.gray(line) : '';
    this.tui.requestRender();
  }

  private ask<C extends Component>(question: string, component: C, wire: (c: C, answer: (value: string, shown?: string) => void) => void): Promise<string | null> {
    return new Promise((resolve) => {
      const finish = (value: string | null, shown?: string) => {
        if (this.active) this.tui.removeChild(this.active);
        this.active = null;
        this.cancel = null;
        this.question = '';
        this.done.push(`${this.s.green('✔')} ${this.s.bold(question)} ${value === null ? this.s.gray('(cancelled)') : this.s.cyan(shown ?? value)}`);
        this.tui.requestRender();
        resolve(value);
      };
      this.question = `${this.s.yellow('?')} ${this.s.bold(question)}`;
      this.active = component;
      this.cancel = () => finish(null);
      wire(component, (value, shown) => finish(value, shown));
      this.tui.addChild(component);
      this.tui.setFocus(component);
      this.tui.requestRender();
    });
  }

  /** One of `choices` (its value), or null when cancelled. */
  select(question: string, choices: Choice[], opts: { initial?: string; custom?: boolean } = {}): Promise<string | null> {
    return this.ask(question, new FilteredList(choices, this.s, opts.initial, opts.custom ?? false), (c, answer) => {
      c.onPick = (v) => answer(v, choices.find((x) => x.value === v)?.label ?? v);
    });
  }

  /** A line of text (`initial` filled in), or null when cancelled; `check` answers an error to show, or null. */
  text(question: string, opts: { initial?: string; mask?: boolean; check?: (v: string) => string | null } = {}): Promise<string | null> {
    const field = opts.mask ? new MaskedInput() : new Input();
    if (opts.initial && field instanceof Input) field.setValue(opts.initial);
    return this.ask(question, field, (c, answer) => {
      c.onSubmit = (raw: string) => {
        const v = raw.trim();
        const err = opts.check?.(v) ?? null;
        if (err) return this.working(this.s.red(err));
        this.working('');
        answer(v, opts.mask ? (v ? `${'•'.repeat(Math.min(v.length, 8))} (${v.length} characters)` : '(none)') : v || '(none)');
      };
    });
  }

  /**
   * Stop reading keys; what was shown stays on the screen. pi-tui draws at most once per 16 ms on
   * a timer: the last lines are drawn (a timer due later fires after it) before it stops.
   */
  async close() {
    this.status = '';
    this.tui.requestRender();
    await new Promise((r) => setTimeout(r, 50));
    this.tui.stop();
  }
}
