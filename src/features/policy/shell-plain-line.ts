/**
 * The plain-line fast path of the Bash-rule checker (docs/policy-commands.md): lines of plain
 * words joined by list, pipe and background operators are split here without the grammar, and a
 * line with two pipes or more is handed to the grammar with its pipes read as `;` (pipesAsLists).
 * ShellParser (shell.ts) tries these before tree-sitter; what they cannot read returns null and
 * goes through the grammar as written.
 */

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
