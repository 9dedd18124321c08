import type { Tree, TreeCursor } from 'web-tree-sitter';
import { dangerousName, declaration, names } from './shell-commands.js';
import { braces, fail, hidden, lit, unquoted, Unsplittable, type Word } from './shell-words.js';

/**
 * The walk over tree-sitter's tree of a Bash command line (docs/policy-commands.md): every node
 * must be of a type the checker's subset knows (else Unsplittable), and each simple command is
 * collected as its words after quote removal, wherever it sits (lists, pipelines, subshells,
 * `if`/`for`/`while`/`case`, function bodies, substitutions, redirections, assignments).
 * ShellParser (shell.ts) parses the line and hands the tree here; what a command runs besides
 * itself is read by shell-commands.ts.
 */

/**
 * The simple commands of a parsed line, in document order, each as its words (read from `line`:
 * what was parsed may have `;` for some of its `|` and newlines, at the same offsets), from one
 * cursor over the whole tree. Throws Unsplittable for what is outside the subset, and Merged where
 * a command's words are on different lines (a newline between two of them that is not a line
 * continuation): tree-sitter-bash reads two commands as one in some pipelines (`a | b | ls⏎curl x
 * > f | c` gives `ls curl x`), bash never.
 */
export function commandsOf(tree: Tree, text: string, line: string): Word[][] {
  continuations(tree, line);
  const c = tree.walk();
  try {
    const walk = new Walk(c, text, line);
    walk.visit();
    return walk.commands;
  } finally {
    c.delete();
  }
}

/**
 * A backslash-newline is removed before bash reads words, so `tou\⏎ch` is `touch`; tree-sitter
 * reads it as a blank. One with no blank on either side (outside quotes, comments and
 * here-documents, where it is text or removed by quote removal) makes the line unsplittable.
 */
function continuations(tree: Tree, line: string): void {
  for (let i = line.indexOf('\\\n'); i >= 0; i = line.indexOf('\\\n', i + 2)) {
    let k = i;
    while (k > 0 && line[k - 1] === '\\') k--;
    if ((i - k) % 2) continue; // `\\⏎`: an escaped backslash, then a newline
    const before = i > 0 ? line[i - 1] : ' ';
    const after = i + 2 < line.length ? line[i + 2] : ' ';
    // A blank on either side: it joins no two words.
    if (/\s/.test(before) || /\s/.test(after)) continue;
    for (let n: ReturnType<Tree['rootNode']['descendantForIndex']> = tree.rootNode.descendantForIndex(i); n; n = n.parent) {
      if (n.type === 'raw_string' || n.type === 'string' || n.type === 'comment' || n.type === 'heredoc_body' || n.type === 'ansi_c_string') break;
      if (n.type === 'program') throw new Unsplittable('a backslash-newline inside a word');
    }
  }
}

/** The grammar read two lines as one command: the index of the newline to read as `;`. */
export class Merged extends Error {
  constructor(readonly at: number) {
    super('merged lines');
  }
}

/** Node types walked as containers: their children are statements or words, each checked in turn. */
const CONTAINERS = new Set([
  'program',
  'list',
  'pipeline',
  'subshell',
  'do_group',
  'if_statement',
  'elif_clause',
  'else_clause',
  'while_statement',
  'negated_command',
  'redirected_statement',
  'case_statement',
  'case_item',
  'heredoc_redirect',
  'heredoc_body',
  'herestring_redirect',
  'file_redirect',
  'command_substitution',
  'process_substitution',
  'variable_assignments',
  'array',
]);
/** Leaves that carry no command and change nothing. */
const LEAVES = new Set(['comment', 'heredoc_start', 'heredoc_end', 'heredoc_content', 'file_descriptor', 'test_operator', 'number', 'special_variable_name']);
/** Node types of an arithmetic expression made of numbers only (no variable: its value may be an expression that runs code). */
const ARITHMETIC = new Set(['number', 'binary_expression', 'unary_expression', 'ternary_expression', 'postfix_expression', 'parenthesized_expression']);
/** Test operators whose operands `[[` evaluates as arithmetic. */
const ARITHMETIC_TESTS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
const NUMBER = /^[+-]?\d+$/;

/**
 * One walk over a parsed line with one cursor: every node is of a type the subset knows, else
 * Unsplittable. Collects each simple command as its words (read from `line`, which has the same
 * offsets as what was parsed).
 */
class Walk {
  readonly commands: Word[][] = [];

  constructor(
    private readonly c: TreeCursor,
    private readonly text: string,
    private readonly line: string,
  ) {}

  private get raw(): string {
    return this.line.slice(this.c.startIndex, this.c.endIndex);
  }

  /** Each child of the cursor's node in turn (the cursor on it), back on the node after. */
  private children(fn: () => void): void {
    const c = this.c;
    if (!c.gotoFirstChild()) return;
    try {
      do fn();
      while (c.gotoNextSibling());
    } finally {
      c.gotoParent();
    }
  }

  /** Any node: a statement, a word, or part of one. */
  visit(): void {
    const c = this.c;
    const type = c.nodeType;
    if (!c.nodeIsNamed) return; // keywords and operators of the node around it
    if (c.nodeIsMissing || type === 'ERROR') fail('a line that does not parse');
    if (CONTAINERS.has(type)) {
      this.children(() => this.visit());
      return;
    }
    if (LEAVES.has(type)) return;
    switch (type) {
      case 'command':
        this.command();
        return;
      case 'variable_assignment':
        this.assignment();
        return;
      case 'declaration_command':
        this.declaration();
        return;
      case 'unset_command':
        this.children(() => {
          if (c.nodeIsNamed) names([c.nodeType === 'variable_name' ? lit(this.raw) : this.word()], 'unset of a subscript');
        });
        return;
      case 'test_command':
      case 'binary_expression':
      case 'unary_expression':
      case 'parenthesized_expression':
        this.test();
        return;
      case 'function_definition':
        this.children(() => {
          if (c.currentFieldName === 'body') this.visit();
        });
        return;
      case 'compound_statement':
        this.children(() => {
          if (c.nodeType === '((') fail('arithmetic command');
          this.visit();
        });
        return;
      case 'for_statement':
        this.children(() => {
          if (c.currentFieldName === 'variable') names([lit(this.raw)], 'a loop over a dangerous variable');
          else this.visit();
        });
        return;
      case 'c_style_for_statement':
        this.children(() => {
          if (c.currentFieldName === 'body') this.visit();
          else if (c.nodeIsNamed) this.arithmetic();
        });
        return;
      case 'variable_name':
        return;
      default:
        this.word();
    }
  }

  /** Numbers and operators only. */
  private arithmetic(): void {
    if (!ARITHMETIC.has(this.c.nodeType)) fail('arithmetic on a variable');
    this.children(() => {
      if (this.c.nodeIsNamed) this.arithmetic();
    });
  }

  /** `[[ ... ]]`, `[ ... ]` and their expressions: arithmetic comparisons of numbers only; `-v` of a plain name. */
  private test(): void {
    const c = this.c;
    let operator = '';
    const operands: Word[] = [];
    this.children(() => {
      if (c.nodeType === 'test_operator') operator = this.raw;
      else if (['binary_expression', 'unary_expression', 'parenthesized_expression'].includes(c.nodeType)) this.test();
      else if (c.nodeIsNamed) operands.push(this.word());
      else if (c.currentFieldName === 'operator') operator = c.nodeType;
    });
    if (ARITHMETIC_TESTS.has(operator) && operands.some((w) => !w.literal || !NUMBER.test(w.text))) fail('arithmetic test of a variable');
    if (operator === '-v' || operator === '-R') names(operands, 'test -v of a subscript');
  }

  /** `NAME=value`, `a[1]=v`, `x+=(...)`: a dangerous name or an arithmetic subscript is unsplittable. */
  private assignment(): void {
    const c = this.c;
    this.children(() => {
      if (c.currentFieldName === 'name') {
        if (c.nodeType === 'subscript') this.subscript();
        else names([lit(this.raw)], 'an assignment to a dangerous variable');
      } else if (c.nodeIsNamed) this.visit();
    });
  }

  /** `a[1]`: a number, `@` or `*` only (an indexed array's subscript is arithmetic). */
  private subscript(): void {
    const c = this.c;
    this.children(() => {
      if (c.currentFieldName === 'name') names([lit(this.raw)], 'a dangerous variable');
      else if (c.currentFieldName === 'index' && !(c.nodeType === 'number' || /^[@*]$/.test(this.raw))) fail('a subscript that is not a number');
    });
  }

  private declaration(): void {
    const c = this.c;
    const words: Word[] = [];
    this.children(() => {
      if (!c.nodeIsNamed) return;
      if (c.nodeType === 'variable_assignment') {
        this.assignment();
        words.push(lit(this.raw.split(/\+?=/)[0] ?? ''));
      } else words.push(c.nodeType === 'variable_name' ? lit(this.raw) : this.word());
    });
    declaration(words);
  }

  /** A simple command: its words, each checked; its redirections and assignments walked. */
  private command(): void {
    const c = this.c;
    const words: Word[] = [];
    let end = -1;
    let named = false;
    this.children(() => {
      const field = c.currentFieldName;
      if (field === 'name' || field === 'argument') {
        if (end >= 0) {
          const gap = this.text.slice(end, c.startIndex);
          const nl = gap.search(/(?<!\\)\n/);
          if (nl >= 0) {
            if (!/^[\s\\]*$/.test(gap)) fail('two lines read as one command');
            throw new Merged(end + nl);
          }
        }
        end = c.endIndex;
        if (field === 'name') named = true;
        // `$"..."` reads as a `$` then a string: not known before it runs.
        words.push(c.nodeIsNamed ? this.word() : { text: '*', literal: false });
      } else if (c.nodeType === 'variable_assignment') this.assignment();
      else this.visit();
    });
    // Only assignments (`X=1`): their values were walked.
    if (named) this.commands.push(words);
  }

  /** The cursor's word after quote removal; substitutions inside are walked, expansions checked. */
  word(): Word {
    const c = this.c;
    const type = c.nodeType;
    switch (type) {
      case 'word': {
        const w = unquoted(this.raw);
        if (braces(this.raw)) w.literal = false;
        return w;
      }
      case 'number':
        return lit(this.raw);
      case 'raw_string':
        return lit(this.raw.slice(1, -1));
      case 'command_name':
      case 'concatenation':
      case 'string': {
        let text = '';
        let literal = true;
        // The unquoted parts as written, anything else as `_`: tree-sitter splits `tou{ch,}` into
        // words `tou`, `{`, `ch,`, `}`, and brace expansion is only seen across them.
        let shape = '';
        this.children(() => {
          if (!c.nodeIsNamed) {
            // Quotes of a string; a lone `$` or other token inside a word: as written.
            if (type !== 'string' || c.nodeType !== '"') text += this.raw;
            shape += '_';
            return;
          }
          shape += c.nodeType === 'word' ? this.raw : '_';
          const w = c.nodeType === 'string_content' ? lit(hidden(this.raw).replace(/\\([$`"\\\n])/g, (_, ch) => (ch === '\n' ? '' : ch))) : this.word();
          text += w.text;
          literal &&= w.literal;
        });
        return { text, literal: literal && !braces(shape) };
      }
      case 'simple_expansion':
        return { text: '*', literal: false };
      case 'expansion':
        this.expansion();
        return { text: '*', literal: false };
      case 'command_substitution':
        // Inside backquotes bash removes a backslash before `$`, a backquote or a backslash and
        // parses the text again (`\`touch\`` nests a substitution); tree-sitter does not.
        if (this.raw.startsWith('`') && /\\[$`\\]/.test(this.raw)) fail('an escape inside backquotes');
        this.visit();
        return { text: '*', literal: false };
      case 'process_substitution':
        this.visit();
        return { text: '*', literal: false };
      case 'arithmetic_expansion':
        this.children(() => {
          if (c.nodeIsNamed) this.arithmetic();
        });
        return { text: '*', literal: false };
      case 'translated_string':
        this.children(() => {
          if (c.nodeIsNamed) this.word();
        });
        return { text: '*', literal: false };
      case 'ansi_c_string':
      case 'brace_expression':
        return { text: '*', literal: false };
      case 'extglob_pattern':
      case 'regex':
        // Patterns tree-sitter leaves whole: `${x#$(cmd)}` is a regex leaf, so any substitution in one is unsplittable.
        hidden(this.raw);
        return { text: this.raw, literal: false };
      case 'array':
        this.visit();
        return { text: '*', literal: false };
      default:
        return fail(`${type} is outside the subset`);
    }
  }

  /**
   * `${...}`: a name (with a number, `@` or `*` subscript) and the operators whose words are data.
   * Unsplittable: `${!x}` (indirection), `${x@P}` (prompt expansion runs substitutions),
   * `${x:off}` with an offset that is no number (arithmetic), `${PS4=...}` (a dangerous name).
   */
  private expansion(): void {
    const c = this.c;
    let previous = '';
    let name = '';
    this.children(() => {
      const t = c.nodeIsNamed ? c.nodeType : this.raw;
      if (t === '!' && previous === '${') fail('indirect expansion');
      if (previous === '@' && t === 'P') fail('prompt expansion');
      if (previous === ':' && c.nodeIsNamed && t !== 'number') fail('a substring offset that is not a number');
      if ((t === '=' || t === ':=') && dangerousName(name)) fail('an assignment to a dangerous variable');
      if (t === 'variable_name') name = this.raw;
      else if (t === 'subscript') this.subscript();
      else if (c.nodeIsNamed && t !== 'special_variable_name' && t !== 'number') this.word();
      previous = t;
    });
  }
}
