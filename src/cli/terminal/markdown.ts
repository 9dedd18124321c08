import { Markdown, type MarkdownTheme } from '@mariozechner/pi-tui';
import { common, createEmphasize } from 'emphasize';
import { Lexer } from 'marked';
import type { Style } from './style.js';

/**
 * Markdown on a terminal: pi-tui's renderer (marked underneath: headings, lists, emphasis, tables,
 * quotes, code blocks) with code highlighted by emphasize (highlight.js grammars, ANSI colours).
 * Used only when the output is a terminal; a pipe gets the model's text as it came.
 */

const highlighter = createEmphasize(common);
const wrap = (open: number, close: number) => (s: string) => (s ? `\x1b[${open}m${s}\x1b[${close}m` : s);

/**
 * Colours of highlight.js classes. A short sheet: emphasize visits every key for every node, and
 * its full default sheet made a 1,000-turn history take twice as long.
 */
const SHEET = {
  keyword: wrap(35, 39),
  built_in: wrap(36, 39),
  type: wrap(36, 39),
  literal: wrap(34, 39),
  number: wrap(34, 39),
  string: wrap(32, 39),
  regexp: wrap(32, 39),
  comment: wrap(90, 39),
  title: wrap(33, 39),
  attr: wrap(33, 39),
  meta: wrap(90, 39),
  variable: wrap(31, 39),
};

function highlight(code: string, lang: string | undefined): string[] {
  try {
    const name = lang?.trim().split(/\s/)[0];
    const r = name && highlighter.registered(name) ? highlighter.highlight(name, code, SHEET) : highlighter.highlightAuto(code, { sheet: SHEET });
    return r.value.split('\n');
  } catch {
    return code.split('\n');
  }
}

const same = (s: string) => s;

export function markdownTheme(s: Style, color: boolean): MarkdownTheme {
  return {
    heading: (x) => s.cyan(x),
    link: (x) => s.cyan(x),
    linkUrl: (x) => s.gray(x),
    code: (x) => s.yellow(x),
    codeBlock: same,
    codeBlockBorder: (x) => s.gray(x),
    quote: color ? wrap(3, 23) : same,
    quoteBorder: (x) => s.gray(x),
    hr: (x) => s.gray(x),
    listBullet: (x) => s.cyan(x),
    bold: (x) => s.bold(x),
    italic: color ? wrap(3, 23) : same,
    strikethrough: color ? wrap(9, 29) : same,
    underline: color ? wrap(4, 24) : same,
    highlightCode: color ? highlight : undefined,
  };
}

/** A markdown text as terminal lines of at most `width` columns. */
export function markdownLines(text: string, width: number, theme: MarkdownTheme): string[] {
  return new Markdown(text, 0, 0, theme).render(Math.max(20, width)).map((l) => l.trimEnd());
}

/**
 * Splits streamed markdown into blocks that are complete (a paragraph followed by another block,
 * a closed code fence, a whole table), so each can be rendered once, as soon as it is whole. The
 * last block stays pending until more text shows it ended, or `end()`.
 */
export class MarkdownBlocks {
  private pending = '';

  /** Add a delta; returns the markdown of the blocks it completed ('' if none). */
  push(delta: string): string {
    this.pending += delta;
    // A block can only end at a line break: skip the lexer for deltas inside a line.
    if (!delta.includes('\n')) return '';
    const tokens = Lexer.lex(this.pending, { gfm: true });
    let last = tokens.length - 1;
    while (last >= 0 && tokens[last].type === 'space') last--;
    if (last <= 0) return '';
    // Everything before the last real block is complete; lists and tables may still grow, so the
    // last one stays, and so does a paragraph whose next line may continue it.
    let cut = 0;
    for (let i = 0; i < last; i++) cut += tokens[i].raw.length;
    if (this.pending.slice(0, cut) !== tokens.slice(0, last).map((t) => t.raw).join('')) return '';
    const done = this.pending.slice(0, cut);
    this.pending = this.pending.slice(cut);
    return done;
  }

  /** What is not complete yet (shown raw while it streams). */
  get tail(): string {
    return this.pending;
  }

  /** The stream ended: the rest is complete. */
  end(): string {
    const rest = this.pending;
    this.pending = '';
    return rest;
  }
}
