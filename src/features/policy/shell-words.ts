/**
 * One word of a shell command line as the Bash-rule checker reads it (docs/policy-commands.md):
 * the Word type, the Unsplittable error that makes a line match every rule, and the reading of an
 * unquoted word's text (quote removal, globs, brace expansion, and expansions the grammar left as
 * text). shell-tree-walk.ts reads the words of a parsed line with these; shell-commands.ts reads
 * wrappers' arguments as Words.
 */

/** One word of a command after quote removal. `literal` false: part of it is only known when it runs. */
export interface Word {
  /** The word's text; what is only known at run time (an expansion, a substitution) reads `*`. */
  text: string;
  /** No expansion, substitution, `$'..'`, glob or brace in it: the shell passes exactly `text`. */
  literal: boolean;
}

/** The line cannot be read within the subset: it matches every rule. */
export class Unsplittable extends Error {}

export function fail(why: string): never {
  throw new Unsplittable(why);
}

export const lit = (text: string): Word => ({ text, literal: true });

/**
 * A leaf's text, refused when it holds an expansion or substitution the grammar did not make a
 * node of (a safety net: where tree-sitter keeps one as text, the walk would not see it).
 */
export function hidden(raw: string): string {
  if (/(?:^|[^\\])(?:\\\\)*(?:\$[({[A-Za-z0-9_@*#?$!-]|`)/.test(raw)) fail('an expansion the grammar left as text');
  return raw;
}

/** Brace expansion in unquoted text (escapes masked): a `{` then a `,` or `..` then a `}`. `{}` is literal. */
export function braces(shape: string): boolean {
  return /\{.*(?:,|\.\.).*\}/s.test(shape.replace(/\\./gs, '__'));
}

/** An unquoted word: backslashes removed; a glob character leaves it not literal. */
export function unquoted(raw: string): Word {
  hidden(raw);
  let text = '';
  let literal = true;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    if (ch === '\\') {
      if (i + 1 < raw.length && raw[i + 1] !== '\n') text += raw[i + 1];
      i++;
      continue;
    }
    if ('*?[]'.includes(ch)) literal = false;
    // tree-sitter-bash sometimes starts a word at the newline before it (`x=1⏎\\ls`): no word holds a bare blank.
    if (/\s/.test(ch)) fail('a blank inside a word');
    text += ch;
  }
  return { text, literal };
}
