import { createRequire } from 'node:module';
import { Language, Parser, type Tree, type TreeCursor } from 'web-tree-sitter';
import { dangerousName, declaration, names, runs } from './shell-commands.js';
import { Unsplittable, type Word } from './shell-words.js';

/**
 * The simple commands of a Bash command line, for Bash rules (docs/policy-commands.md). The line is
 * parsed by tree-sitter's bash grammar (web-tree-sitter runs it as WebAssembly, so nothing is
 * compiled at install) and read as a stated subset of the shell: literal words and quoting, pipes
 * and lists, subshells and groups, `if`/`for`/`while`/`case`, functions (their bodies), command
 * and process substitution, redirections and here-documents, assignments, and the wrappers of
 * shell-commands.ts. Every node of the tree must be of a type the subset knows; every simple
 * command is one target, wherever it sits, and what a wrapper runs (`sudo -u x cmd`, `sh -c '...'`)
 * is one more, `/usr/bin/curl` also read as `curl`.
 *
 * The checker fails closed: a command name not fully literal after quote removal (`$CMD`,
 * `$'\x74ouch'`, `tou?h`, `tou{ch,}`), a backslash-newline inside a word, a construct outside the
 * subset (`${x@P}`, arithmetic on a variable, `alias`, `trap`, a shell reading stdin, an unknown
 * option of a wrapper, ...) answers null: the caller takes such a line to match every rule. An
 * expansion in an argument reads `*` in the target (`rm -rf *` for `rm -rf $X`).
 */

const require = createRequire(import.meta.url);
/** How deep `sh -c "sh -c '...'"` is followed before the line counts as unparseable. */
const MAX_DEPTH = 8;
/** Longer lines are not parsed (null: every rule matches them). */
const MAX_LINE = 100_000;
/**
 * Lines remembered with their commands: agents run the same lines again and again (`npm test`,
 * `git status`), and a compound line costs 0.1-0.3 ms of parsing (bench/policy.ts).
 */
const CACHED_LINES = 1000;
const CACHED_LENGTH = 4096;

export class ShellParser {
  private readonly seen = new Map<string, string[] | null>();

  private constructor(private readonly parser: Parser) {}

  /** Load the grammar once (a few ms); parsing is synchronous after. */
  static async load(): Promise<ShellParser> {
    await Parser.init();
    const language = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
    const parser = new Parser();
    parser.setLanguage(language);
    return new ShellParser(parser);
  }

  /** The simple commands of `line`, each as its words joined by one space; null when it cannot be split. */
  commands(line: string): string[] | null {
    const hit = this.seen.get(line);
    if (hit !== undefined) return hit;
    const found = this.split(line);
    if (line.length <= CACHED_LENGTH) {
      if (this.seen.size >= CACHED_LINES) this.seen.delete(this.seen.keys().next().value as string);
      this.seen.set(line, found);
    }
    return found;
  }

  /** commands() without its cache and without the plain-line shortcut: always through the grammar. */
  parsed(line: string): string[] | null {
    return this.split(line, false);
  }

  private split(line: string, shortcut = true): string[] | null {
    try {
      const out: string[] = [];
      this.collect(line, out, 0, shortcut);
      return [...new Set(out)];
    } catch (e) {
      if (e instanceof Unsplittable) return null;
      throw e;
    }
  }

  private collect(line: string, out: string[], depth: number, shortcut = true): void {
    if (depth > MAX_DEPTH || line.length > MAX_LINE) throw new Unsplittable('too deep or too long');
    const plain = shortcut ? plainCommands(line) : null;
    if (plain) {
      for (const words of plain) this.expand(words.map(lit), out, depth, shortcut);
      return;
    }
    const listed = shortcut ? pipesAsLists(line) : null;
    let text = listed ?? line;
    for (let fixes = 0; ; fixes++) {
      const tree = this.parser.parse(text);
      if (!tree) throw new Unsplittable('no tree');
      try {
        if (tree.rootNode.hasError) {
          if (listed === null) throw new Unsplittable('a line that does not parse');
          this.collect(line, out, depth, false);
          return;
        }
        let commands: Word[][];
        try {
          commands = commandsOf(tree, text, line);
        } catch (e) {
          if (!(e instanceof Merged)) throw e;
          // The grammar read two lines as one command: read them as `;` (same length) and parse again.
          if (fixes >= MAX_DEPTH) throw new Unsplittable('too many merged lines');
          text = `${text.slice(0, e.at)};${text.slice(e.at + 1)}`;
          continue;
        }
        for (const words of commands) this.expand(words, out, depth, shortcut);
        return;
      } finally {
        tree.delete();
      }
    }
  }

  /** Record a simple command, then what it runs when it is a wrapper or a shell. */
  private expand(words: Word[], out: string[], depth: number, shortcut = true): void {
    if (!words.length) return;
    if (depth > MAX_DEPTH) throw new Unsplittable('too deep');
    const name = words[0];
    if (!name.literal) throw new Unsplittable('a command name only known when it runs');
    out.push(words.map((w) => w.text).join(' '));
    const slash = name.text.lastIndexOf('/');
    const base = slash >= 0 ? name.text.slice(slash + 1) : name.text;
    if (base !== name.text) out.push([base, ...words.slice(1).map((w) => w.text)].join(' '));
    const inner = runs(base, words.slice(1));
    for (const script of inner.scripts) this.collect(script, out, depth + 1, shortcut);
    for (const command of inner.commands) this.expand(command, out, depth + 1, shortcut);
  }
}

const lit = (text: string): Word => ({ text, literal: true });

/**
 * Characters of a line that is one simple command of plain words: no quotes, escapes, expansions,
 * globs, comments, redirections or operators. Tree-sitter would read it as one `command` node whose
 * words are the space-separated parts, so it is split here without the parser (a tenth of the
 * time); so are such commands joined by operators (plainCommands). Words that make it something
 * else in the grammar (keywords, declarations, a leading `X=1` assignment) send it to the parser.
 */
const PLAIN_LINE = /^[A-Za-z0-9_./:=@%+,-]+(?: +[A-Za-z0-9_./:=@%+,-]+)*$/;
/**
 * The command name: no `=` (tree-sitter reads `a=`, `9=x` and `a+=` as assignments), no `@`, `%`,
 * `:`, `,`, no leading `-` (tree-sitter drops a lone `-` before an assignment: `- X=1 b` is `b`).
 */
const PLAIN_NAME = /^[A-Za-z0-9_./][A-Za-z0-9_./-]*$/;
const NOT_PLAIN_FIRST = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'case',
  'esac',
  'while',
  'until',
  'for',
  'in',
  'select',
  'function',
  'time',
  'coproc',
  'declare',
  'typeset',
  'export',
  'readonly',
  'local',
  'unset',
]);

/** The words of a plain line (see PLAIN_LINE); null when the line needs the parser. */
export function plainWords(line: string): string[] | null {
  const trimmed = line.replace(/^ +| +$/g, '');
  if (!PLAIN_LINE.test(trimmed)) return null;
  const words = trimmed.split(/ +/);
  if (NOT_PLAIN_FIRST.has(words[0]) || !PLAIN_NAME.test(words[0])) return null;
  return words;
}

/** The operators plain commands may be joined with: `&&`, `||`, `;`, `|`, `&`. */
const PLAIN_OPERATOR = / *(?:&&|\|\||[;|&]) */;

/**
 * The simple commands of a line of plain commands joined by list, pipe and background operators
 * (`cd src && npm test | tail -5`), each as its words; null when the line needs the parser (any
 * other character, an operator with no command on one side, a part that is no plain line).
 */
export function plainCommands(line: string): string[][] | null {
  const out: string[][] = [];
  for (const part of line.split(PLAIN_OPERATOR)) {
    const words = plainWords(part);
    if (!words) return null;
    out.push(words);
  }
  return out;
}

/**
 * tree-sitter-bash reads a pipeline of three commands or more several times slower than the same
 * commands in a `;` list (0.05-0.1 ms more: its pipeline rules are ambiguous), and the simple
 * commands are the same either way. So a line with two pipes or more is parsed with each `|` read
 * as `;`: the same length, so every node keeps its offsets in the line, and words are read from
 * the line itself. Null (parse the line as written) when a `|` may be something other than a pipe
 * (case patterns, extended globs, arithmetic, `[[ =~ ]]`, `${...}`, `>|`, `|&`) or stands where no
 * pipe could (`a |; b`, `a | # c`); and when the `;` line does not parse, the line is parsed as written.
 */
export function pipesAsLists(line: string): string | null {
  if (NOT_A_PIPE.test(line)) return null;
  let out = '';
  let pipes = 0;
  let from = 0;
  for (let i = line.indexOf('|'); i >= 0; i = line.indexOf('|', i + 1)) {
    if (line[i + 1] === '|') {
      i++; // `||`
      continue;
    }
    let b = i - 1;
    while (line[b] === ' ' || line[b] === '\t') b--;
    let a = i + 1;
    while (a < line.length && /\s/.test(line[a])) a++;
    // A pipe stands between a command's end and a command's start (blanks, and newlines after it).
    if (b < 0 || /[\s;&|(!]/.test(line[b]) || a >= line.length || /[;&|)#]/.test(line[a])) return null;
    out += `${line.slice(from, i)};`;
    from = i + 1;
    pipes++;
  }
  return pipes >= 2 ? out + line.slice(from) : null;
}
const NOT_A_PIPE = /case|\(\(|\$\[|\[\[|[@!?*+]\(|\$\{|>\||\|&/;

/**
 * The simple commands of a parsed line, in document order, each as its words (read from `line`:
 * what was parsed may have `;` for some of its `|` and newlines, at the same offsets), from one
 * cursor over the whole tree. Throws Unsplittable for what is outside the subset, and Merged where
 * a command's words are on different lines (a newline between two of them that is not a line
 * continuation): tree-sitter-bash reads two commands as one in some pipelines (`a | b | ls⏎curl x
 * > f | c` gives `ls curl x`), bash never.
 */
function commandsOf(tree: Tree, text: string, line: string): Word[][] {
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
class Merged extends Error {
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

/**
 * A leaf's text, refused when it holds an expansion or substitution the grammar did not make a
 * node of (a safety net: where tree-sitter keeps one as text, the walk would not see it).
 */
function hidden(raw: string): string {
  if (/(?:^|[^\\])(?:\\\\)*(?:\$[({[A-Za-z0-9_@*#?$!-]|`)/.test(raw)) fail('an expansion the grammar left as text');
  return raw;
}

/** Brace expansion in unquoted text (escapes masked): a `{` then a `,` or `..` then a `}`. `{}` is literal. */
function braces(shape: string): boolean {
  return /\{.*(?:,|\.\.).*\}/s.test(shape.replace(/\\./gs, '__'));
}

/** An unquoted word: backslashes removed; a glob character leaves it not literal. */
function unquoted(raw: string): Word {
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

function fail(why: string): never {
  throw new Unsplittable(why);
}
