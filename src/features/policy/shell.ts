import { createRequire } from 'node:module';
import { Language, Parser, type Tree, type TreeCursor } from 'web-tree-sitter';

/**
 * The simple commands of a Bash command line, for Bash rules (CONTRACT 15). The line is parsed by
 * tree-sitter's bash grammar (the parser opencode's permission rules use; web-tree-sitter runs it
 * as WebAssembly, so nothing is compiled at install): every `command` node of the tree is one
 * simple command, wherever it sits (`&&`, `||`, `;`, `|`, `&`, newlines, subshells, `$(...)`,
 * backquotes, process substitutions, function bodies, loops). A regular expression cannot tell
 * `echo "a && b"` from `a && b`; a grammar can.
 *
 * Then wrappers are seen through, each adding the command it runs as one more simple command:
 * `sh -c '...'` and `bash -c` (the script is parsed in turn), `eval`, `env X=1 cmd`, `sudo`,
 * `xargs`, `nice`, `nohup`, `timeout`, `find -exec`, ... and `/usr/bin/curl` also reads as `curl`.
 * Words are unquoted as the shell would (`c'u'rl` is `curl`). A line that does not parse, or whose
 * command name is only known when it runs (`$CMD x`, `$(echo curl) x`), answers null: the caller
 * then takes it to match every rule.
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

class Unparseable extends Error {}

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
      if (e instanceof Unparseable) return null;
      throw e;
    }
  }

  private collect(line: string, out: string[], depth: number, shortcut = true): void {
    if (depth > MAX_DEPTH || line.length > MAX_LINE) throw new Unparseable();
    const plain = shortcut ? plainCommands(line) : null;
    if (plain) {
      for (const words of plain) this.expand(words, out, depth, shortcut);
      return;
    }
    const listed = shortcut ? pipesAsLists(line) : null;
    let text = listed ?? line;
    for (let fixes = 0; ; fixes++) {
      const tree = this.parser.parse(text);
      if (!tree) throw new Unparseable();
      try {
        if (tree.rootNode.hasError) {
          if (listed === null) throw new Unparseable();
          this.collect(line, out, depth, false);
          return;
        }
        const { commands, merged } = commandsOf(tree, text, line);
        if (merged >= 0) {
          // The grammar read two lines as one command: read them as `;` (same length) and parse again.
          if (fixes >= MAX_DEPTH) throw new Unparseable();
          text = `${text.slice(0, merged)};${text.slice(merged + 1)}`;
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
  private expand(words: string[], out: string[], depth: number, shortcut = true): void {
    if (!words.length) return;
    if (depth > MAX_DEPTH) throw new Unparseable();
    out.push(words.join(' '));
    const base = words[0].includes('/') ? words[0].slice(words[0].lastIndexOf('/') + 1) : words[0];
    if (base !== words[0]) out.push([base, ...words.slice(1)].join(' '));
    const inner = unwrap(base, words.slice(1));
    if (!inner) return;
    if ('script' in inner) this.collect(inner.script, out, depth + 1, shortcut);
    else this.expand(inner.words, out, depth + 1, shortcut);
  }
}

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
const NOT_PLAIN_FIRST = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'case', 'esac', 'while', 'until', 'for', 'in', 'select', 'function', 'time', 'coproc', 'declare', 'typeset', 'export', 'readonly', 'local', 'unset']);

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
 * what was parsed may have `;` for some of its `|` and newlines, at the same offsets). The command
 * nodes come from one call into the parser, their words from one cursor (no node object per
 * word). Throws when a command's name is only known when the line runs.
 *
 * `merged`: where a command's words are on different lines (a newline between two of them that
 * is not a line continuation), the grammar has read two commands as one: tree-sitter-bash does
 * so in some pipelines (`a | b | ls⏎curl x > f | c` gives `ls curl x`), bash never. The index of
 * that newline, to be read as `;` (-1: none). Throws when the gap holds more than blanks (a
 * comment, a redirection): no `;` can be put in safely then.
 */
function commandsOf(tree: Tree, text: string, line: string): { commands: string[][]; merged: number } {
  const commands: string[][] = [];
  let dynamicName = false;
  // The command nodes in document order in one call into the parser; their words with one cursor.
  const c = tree.walk();
  try {
    for (const node of tree.rootNode.descendantsOfType('command')) {
      c.reset(node!);
      if (!c.gotoFirstChild()) continue;
      const words: string[] = [];
      let named = false;
      let end = -1;
      do {
        const field = c.currentFieldName;
        if (field !== 'name' && field !== 'argument') continue;
        if (field === 'name') {
          named = true;
          dynamicName ||= dynamicAt(c);
        }
        if (end >= 0) {
          const gap = text.slice(end, c.startIndex);
          const nl = gap.search(/(?<!\\)\n/);
          if (nl >= 0) {
            if (!/^[\s\\]*$/.test(gap)) throw new Unparseable();
            return { commands, merged: end + nl };
          }
        }
        words.push(wordAt(c, line));
        end = c.endIndex;
      } while (c.gotoNextSibling());
      // Only assignments (`X=1`): their values' commands are walked on their own.
      if (named) commands.push(words);
    }
  } finally {
    c.delete();
  }
  if (dynamicName) throw new Unparseable();
  return { commands, merged: -1 };
}

const DYNAMIC = new Set(['simple_expansion', 'expansion', 'command_substitution', 'arithmetic_expansion', 'process_substitution']);

/** The cursor's node holds an expansion: a command name whose value is only known when the line runs. */
function dynamicAt(c: TreeCursor): boolean {
  let depth = 0;
  let found = false;
  for (;;) {
    if (DYNAMIC.has(c.nodeType)) {
      found = true;
      break;
    }
    if (c.gotoFirstChild()) {
      depth++;
      continue;
    }
    while (depth > 0 && !c.gotoNextSibling()) {
      c.gotoParent();
      depth--;
    }
    if (depth === 0) break;
  }
  for (; depth > 0; depth--) c.gotoParent();
  return found;
}

/** The cursor's word as the shell passes it on: quotes removed, backslash escapes resolved; expansions kept as written. */
function wordAt(c: TreeCursor, line: string): string {
  const type = c.nodeType;
  const text = line.slice(c.startIndex, c.endIndex);
  switch (type) {
    case 'word':
      return text.replace(/\\(.)/gs, '$1');
    case 'raw_string':
      return text.slice(1, -1);
    case 'ansi_c_string':
      return text.slice(2, -1);
    case 'string': {
      const body = text.startsWith('$"') ? text.slice(2, -1) : text.slice(1, -1);
      return body.replace(/\\([$`"\\\n])/g, '$1');
    }
    case 'command_name':
    case 'concatenation': {
      // A command name is its one named part (`"curl"` is curl), else as written; a concatenation its parts joined.
      let joined = '';
      let named = 0;
      let only = '';
      if (c.gotoFirstChild()) {
        do {
          if (type === 'concatenation') joined += wordAt(c, line);
          else if (c.nodeIsNamed && ++named === 1) only = wordAt(c, line);
        } while (c.gotoNextSibling());
        c.gotoParent();
      }
      return type === 'concatenation' ? joined : named === 1 ? only : text;
    }
    default:
      return text;
  }
}

type Inner = { words: string[] } | { script: string } | null;

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'busybox']);
/** Wrappers that run the rest of their words after options, with the options that take a value. */
const WRAPPERS: Record<string, Set<string>> = {
  sudo: new Set(['-u', '-g', '-h', '-p', '-C', '-D', '-r', '-t', '-T', '-U', '--user', '--group', '--host', '--prompt', '--chdir']),
  doas: new Set(['-u', '-C']),
  nice: new Set(['-n', '--adjustment']),
  nohup: new Set(),
  time: new Set(['-f', '-o', '--format', '--output']),
  command: new Set(),
  builtin: new Set(),
  exec: new Set(['-a']),
  setsid: new Set(),
  stdbuf: new Set(['-i', '-o', '-e']),
  ionice: new Set(['-c', '-n', '-p', '-P', '-u']),
  chrt: new Set(),
  unbuffer: new Set(),
  xargs: new Set(['-I', '-L', '-n', '-P', '-s', '-d', '-E', '-a', '--max-args', '--max-procs', '--delimiter', '--arg-file', '--replace', '--max-lines', '--max-chars', '--eof']),
  timeout: new Set(['-s', '-k', '--signal', '--kill-after']),
  watch: new Set(['-n', '-d', '--interval']),
  flock: new Set(['-w', '-E', '--timeout', '--conflict-exit-code']),
};

/** What a wrapper runs: the words of the command, or a script to parse; null when it is no wrapper. */
function unwrap(base: string, args: string[]): Inner {
  if (SHELLS.has(base)) {
    let i = 0;
    if (base === 'busybox' && args[0] && SHELLS.has(args[0])) i = 1;
    let script = false;
    for (; i < args.length; i++) {
      const a = args[i];
      if (a === '--') break;
      if (!a.startsWith('-') && !a.startsWith('+')) break;
      if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) script = true;
      else if ((a === '-o' || a === '+o' || a === '-O' || a === '+O') && i + 1 < args.length) i++;
    }
    return script && i < args.length ? { script: args[i] } : null;
  }
  if (base === 'eval') return args.length ? { script: args.join(' ') } : null;
  if (base === 'env') return envInner(args);
  if (base === 'find') return findInner(args);
  const valued = WRAPPERS[base];
  if (!valued) return null;
  let i = afterOptions(args, valued);
  // `timeout 5 cmd`, `chrt 10 cmd`, `flock FILE cmd`: one positional before the command.
  if ((base === 'timeout' || base === 'chrt' || base === 'flock') && i < args.length) i++;
  const rest = args.slice(i);
  if (!rest.length) return null;
  // `watch 'curl x'` and `flock f 'cmd'` take a command line as one word.
  if ((base === 'watch' || base === 'flock') && rest.length === 1) return { script: rest[0] };
  return { words: rest };
}

/** Where a wrapper's own options end: at `--` (skipped), or the first word that is no option; `valued` options take the next word. */
function afterOptions(args: string[], valued: Set<string>): number {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') return i + 1;
    if (!a.startsWith('-') || a === '-') return i;
    if (valued.has(a)) i++;
  }
  return args.length;
}

const ENV_VALUED = new Set(['-u', '-C', '--unset', '--chdir']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** `env [-i] [-u NAME] [NAME=value]... cmd`, and `env -S "cmd args"` (a command line in one word). */
function envInner(args: string[]): Inner {
  let i = afterOptions(args, ENV_VALUED);
  const split = args.findIndex((a) => a === '-S' || a === '--split-string' || /^-S./.test(a));
  if (split >= 0 && split < i) return { script: [...(args[split].length > 2 && !args[split].startsWith('--') ? [args[split].slice(2)] : []), ...args.slice(split + 1)].join(' ') };
  while (i < args.length && ASSIGNMENT.test(args[i])) i++;
  return i < args.length ? { words: args.slice(i) } : null;
}

/** `find . -exec rm {} \;`: the words after -exec (or -execdir, -ok, -okdir) up to `;` or `+`. */
function findInner(args: string[]): Inner {
  const i = args.findIndex((a) => a === '-exec' || a === '-execdir' || a === '-ok' || a === '-okdir');
  if (i < 0) return null;
  const end = args.findIndex((a, j) => j > i && (a === ';' || a === '+'));
  const words = args.slice(i + 1, end < 0 ? undefined : end);
  return words.length ? { words } : null;
}
