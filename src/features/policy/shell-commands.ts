import { DANGEROUS, OPAQUE, type Options, RUNNERS, SHELL_FLAGS, SHELL_LONG_FLAGS, SHELLS, WRAPPER_OPTIONS } from './shell-command-tables.js';
import { fail, lit, type Word } from './shell-words.js';

/**
 * What a simple command runs besides itself, for Bash rules (docs/policy-commands.md). The parser
 * (shell.ts) hands over a command's words; this file knows the wrappers that run another command
 * from their arguments (`sudo -u x cmd`, `timeout 5 cmd`, `find -exec cmd ;`, `sh -c '...'`) and
 * the builtins that change what later words mean (`alias`, `hash`, `trap`, `declare -i`, ...).
 *
 * Written by hand: no library models what a command line will run (shell-quote and the parsers
 * only split words). Each wrapper's options are read as its own getopt reads them, from a table
 * (shell-command-tables.ts): an option the table does not list (an abbreviated long option, a
 * new flag), a word not fully literal before the command, or a command the table lists as opaque
 * throws Unsplittable, which makes the whole line match every rule. Seeing through less than a wrapper accepts is the
 * failure this file must not have; refusing a line it could have read only asks more often.
 */

/** What a command runs: more commands (as words) and command lines to parse. */
export interface Runs {
  commands: Word[][];
  scripts: string[];
}

const NOTHING: Runs = { commands: [], scripts: [] };

/**
 * Variables whose value the shell runs or reads as code (prompt expansion, start-up files,
 * imported functions, the alias and command-hash tables): a line assigning one is unsplittable.
 */
export function dangerousName(name: string): boolean {
  return DANGEROUS.has(name) || name.startsWith('BASH_FUNC_');
}

interface Parsed {
  /** Index of the first operand. */
  at: number;
  /** Options seen, short by letter, long by name, each with its value ('' for a flag). */
  seen: Map<string, string>;
}

/** Read options as getopt with a leading `+` does (stop at the first operand); throws on what it does not know. */
function options(args: Word[], o: Options, from = 0): Parsed {
  const seen = new Map<string, string>();
  const flags = o.flags ?? '';
  const valued = o.valued ?? '';
  let i = from;
  for (; i < args.length; i++) {
    const w = args[i];
    if (!w.literal) fail("a word not known before it runs among a wrapper's options");
    const a = w.text;
    if (a === '--') return { at: i + 1, seen };
    if (!a.startsWith('-') || a === '-') break;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      if (o.longValued?.includes(name)) {
        if (eq >= 0) seen.set(name, a.slice(eq + 1));
        else {
          if (i + 1 >= args.length || !args[i + 1].literal) fail(`--${name} without a known value`);
          seen.set(name, args[++i].text);
        }
      } else if (o.long?.includes(name) && eq < 0) seen.set(name, '');
      else if (o.longOptional?.includes(name)) seen.set(name, eq < 0 ? '' : a.slice(eq + 1));
      else fail(`unknown option ${a}`);
      continue;
    }
    if (o.numeric && /^-\d+$/.test(a)) {
      seen.set('n', a.slice(1));
      continue;
    }
    for (let k = 1; k < a.length; k++) {
      const ch = a[k];
      if (valued.includes(ch)) {
        if (k + 1 < a.length) seen.set(ch, a.slice(k + 1));
        else {
          if (i + 1 >= args.length || !args[i + 1].literal) fail(`-${ch} without a known value`);
          seen.set(ch, args[++i].text);
        }
        break;
      }
      if (!flags.includes(ch)) fail(`unknown option -${ch}`);
      seen.set(ch, '');
    }
  }
  for (const r of o.refuse ?? '') if (seen.has(r)) fail(`option -${r}`);
  return { at: i, seen };
}

/** The words from `at` on as a command, every word before it having been literal. */
function command(args: Word[], at: number): Runs {
  return at < args.length ? { commands: [args.slice(at)], scripts: [] } : NOTHING;
}

/** One literal positional (a duration, a CPU mask, a lock file) before the command. */
function positional(args: Word[], at: number): number {
  if (at >= args.length) return at;
  if (!args[at].literal) fail("a word not known before it runs before a wrapper's command");
  return at + 1;
}

/** A file a shell reads its program from: a literal path that is no stream of this line. */
function scriptFile(w: Word | undefined): void {
  if (!w) fail('a shell reading its program from standard input');
  if (!w.literal || w.text === '-' || /^\/(dev|proc)\//.test(w.text)) fail('a shell reading its program from a stream');
}

/** `sh -c 'script' [name args]`, `bash -lc`, `bash -c -- x`, `bash script.sh`; stdin, `-s` and `-i`: unsplittable. */
function shell(args: Word[]): Runs {
  let script = false;
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i];
    if (!w.literal) fail("a word not known before it runs among a shell's options");
    const a = w.text;
    if (a === '--' || a === '-') {
      i++;
      break;
    }
    if (a.startsWith('--')) {
      if (SHELL_LONG_FLAGS.includes(a)) continue;
      fail(`shell option ${a}`);
    }
    if (!/^[-+]/.test(a)) break;
    for (let k = 1; k < a.length; k++) {
      const ch = a[k];
      if (ch === 'c') script = true;
      else if (ch === 'o' || ch === 'O') {
        if (i + 1 >= args.length || !args[i + 1].literal) fail(`-${ch} without a known value`);
        if (args[++i].text === 'expand_aliases') fail('expand_aliases');
        break;
      } else if (ch === 's' || ch === 'i') fail('a shell reading its program from standard input');
      else if (!SHELL_FLAGS.includes(ch)) fail(`shell option -${ch}`);
    }
  }
  if (!script) {
    scriptFile(args[i]);
    return NOTHING; // a program file: not read (docs/policy-commands.md)
  }
  const s = args[i];
  if (!s) fail('sh -c without a script');
  if (!s.literal) fail('a shell script only known when it runs');
  return { commands: [], scripts: [s.text] };
}

/** `env [opts] [NAME=value]... [cmd]`; `-S`/`--split-string` of plain words is split and read as more arguments, as env does. */
function env(args: Word[]): Runs {
  const rest = [...args];
  let i = 0;
  for (;;) {
    const { at, seen } = options(
      rest,
      WRAPPER_OPTIONS.env,
      i,
    );
    const split = seen.get('S') ?? seen.get('split-string');
    if (split === undefined) {
      i = at;
      break;
    }
    // env's own quoting (`\_`, `${VAR}`, quotes) is not modelled: plain words only.
    if (!/^[A-Za-z0-9_./:=@%+, -]*$/.test(split)) fail('env -S with quoting or expansions');
    // The split words stand where the option was and are read as options again, as env does.
    rest.splice(0, at, ...split.split(' ').filter(Boolean).map(lit));
    i = 0;
  }
  if (rest[i]?.literal && rest[i].text === '-') i++;
  for (; i < rest.length; i++) {
    const m = /^([^=]+)=/.exec(rest[i].text);
    if (!m) break;
    if (!rest[i].literal && rest[i].text.indexOf('*') < m[0].length) fail('an env assignment only known when it runs');
    if (dangerousName(m[1])) fail(`env ${m[1]}=`);
  }
  return command(rest, i);
}

/** `xargs [opts] [cmd [args]]` (echo when none), with the words it reads; a command named by the replacement string is unsplittable. */
function xargs(args: Word[]): Runs {
  const { at, seen } = options(args, WRAPPER_OPTIONS.xargs);
  // -i, -l and -e (an optional value attached only) are not in the table: unsplittable.
  const replace = seen.get('I') ?? (seen.has('replace') ? seen.get('replace') || '{}' : undefined);
  // Without a replacement string, the words read from stdin are appended to the command: one more
  // word only known when it runs (`echo touch p | xargs env` runs `env touch p`).
  const words = at < args.length ? args.slice(at) : [lit('echo')];
  if (replace === undefined) return { commands: [[...words, { text: '*', literal: false }]], scripts: [] };
  return { commands: [words.map((w) => (w.text.includes(replace) ? { text: w.text, literal: false } : w))], scripts: [] };
}

/** `watch [opts] cmd...`: the words joined are run by `sh -c` (with -x, as words). */
function watch(args: Word[]): Runs {
  const { at, seen } = options(args, WRAPPER_OPTIONS.watch);
  if (seen.has('x') || seen.has('exec')) return command(args, at);
  const rest = args.slice(at);
  if (!rest.length) return NOTHING;
  if (rest.some((w) => !w.literal)) fail('watch of a command only known when it runs');
  return { commands: [], scripts: [rest.map((w) => w.text).join(' ')] };
}

/** `flock [opts] FILE cmd...`, `flock [opts] FILE -c 'script'`, `flock -c 'script' FILE`. */
function flock(args: Word[]): Runs {
  const { at, seen } = options(args, WRAPPER_OPTIONS.flock);
  const before = seen.get('c') ?? seen.get('command');
  const after = positional(args, at);
  const next = args[after];
  let script = before;
  if (next?.literal && (next.text === '-c' || next.text === '--command')) {
    if (!args[after + 1]?.literal) fail('flock -c of a script only known when it runs');
    script = args[after + 1].text;
  } else if (next?.literal && /^--command=/.test(next.text)) script = next.text.slice(10);
  else if (next?.literal && next.text.startsWith('-') && next.text !== '--') fail(`flock ${next.text} after the file`);
  if (script !== undefined) return { commands: [], scripts: [script] };
  return command(args, next?.text === '--' ? after + 1 : after);
}

/** `find ... -exec cmd {} ;` (and -execdir, -ok, -okdir), every one of them. */
function find(args: Word[]): Runs {
  const commands: Word[][] = [];
  for (let i = 0; i < args.length; i++) {
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes(args[i].text)) continue;
    let end = i + 1;
    while (end < args.length && !(args[end].text === ';' || (args[end].text === '+' && args[end - 1].text === '{}'))) end++;
    // Each `{}` is a found path: a word only known when it runs (`-exec env {} ;` runs what it finds).
    const words = args.slice(i + 1, end).map((w) => (w.text.includes('{}') ? { text: w.text, literal: false } : w));
    if (words.length) commands.push(words);
    i = end;
  }
  return { commands, scripts: [] };
}

/** `eval` of literal words is parsed; of anything else, unsplittable. */
function evalOf(args: Word[]): Runs {
  if (args.some((w) => !w.literal)) fail('eval of a word only known when it runs');
  return args.length ? { commands: [], scripts: [args.map((w) => w.text).join(' ')] } : NOTHING;
}

/** Builtins that assign a named variable: a name only known when it runs, with a subscript, or a dangerous one. */
export function names(words: Word[], why: string): void {
  for (const w of words) {
    if (!w.literal || w.text.includes('[') || dangerousName(w.text.replace(/[+]?=.*$/s, ''))) fail(why);
  }
}

/** `declare`, `typeset`, `local`, `export`, `readonly` as words (after `builtin`/`command`). */
export function declaration(words: Word[]): void {
  for (const w of words) {
    if (!w.literal) fail('a declaration only known when it runs');
    if (/^[-+]/.test(w.text)) {
      if (/[in]/.test(w.text)) fail('declare -i / -n');
      continue;
    }
    names([lit(w.text.replace(/=.*$/s, ''))], 'a declaration of a dangerous variable');
  }
}

/** The options whose operands read as arithmetic or as variable names in `test`/`[`. */
export function testWords(words: Word[]): void {
  for (let i = 0; i < words.length; i++) {
    const a = words[i].text;
    if ((a === '-v' || a === '-R') && words[i + 1]) names([words[i + 1]], 'test -v of a subscript');
  }
}

function runner(args: Word[], [sub, before]: [string[], number]): Runs {
  let i = 0;
  if (sub.length) {
    if (!args[0]?.literal || !sub.includes(args[0].text)) return NOTHING;
    i = 1;
  }
  i = options(args, {}, i).at;
  for (let k = 0; k < before; k++) i = positional(args, i);
  if (args[i]?.literal && args[i].text === '--') i++;
  return command(args, i);
}

/** What the command `base args...` runs besides itself (its name already literal); throws Unsplittable. */
export function runs(base: string, args: Word[]): Runs {
  if (OPAQUE.has(base) || /^ld-.*\.so/.test(base)) fail(`${base} runs what the parser does not read`);
  if (SHELLS.has(base)) return shell(args);
  const r = RUNNERS[base];
  if (r) return runner(args, r);
  switch (base) {
    case 'busybox':
    case 'toybox': {
      if (!args.length) return NOTHING;
      if (!args[0].literal) fail('busybox applet only known when it runs');
      return { commands: [args], scripts: [] };
    }
    case 'eval':
      return evalOf(args);
    case 'source':
    case '.':
      if (args[0]?.literal && args[0].text === '--') args = args.slice(1);
      if (args[0]?.literal && args[0].text.startsWith('-')) fail('source with options');
      scriptFile(args[0]);
      return NOTHING;
    case 'env':
      return env(args);
    case 'sudo': {
      const { at, seen } = options(args, WRAPPER_OPTIONS.sudo);
      let i = at;
      for (; i < args.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[i].text); i++) {
        if (!args[i].literal || dangerousName(args[i].text.split('=')[0])) fail('sudo assignment');
      }
      if (i >= args.length && ['s', 'i', 'shell', 'login'].some((k) => seen.has(k))) fail('sudo -s/-i reading standard input');
      if (seen.has('e') || seen.has('edit')) return NOTHING;
      return command(args, i);
    }
    case 'doas': {
      const { at, seen } = options(args, WRAPPER_OPTIONS.doas);
      if (at >= args.length && seen.has('s')) fail('doas -s reading standard input');
      return command(args, at);
    }
    case 'nice':
      return command(args, options(args, WRAPPER_OPTIONS.nice).at);
    case 'nohup':
    case 'builtin':
      return command(args, options(args, {}).at);
    case 'command':
      return command(args, options(args, WRAPPER_OPTIONS.command).at);
    case 'exec':
      return command(args, options(args, WRAPPER_OPTIONS.exec).at);
    case 'time':
      return command(args, options(args, WRAPPER_OPTIONS.time).at);
    case 'setsid':
      return command(args, options(args, WRAPPER_OPTIONS.setsid).at);
    case 'stdbuf':
      return command(args, options(args, WRAPPER_OPTIONS.stdbuf).at);
    case 'ionice':
      return command(args, options(args, WRAPPER_OPTIONS.ionice).at);
    case 'chrt': {
      const o = options(args, WRAPPER_OPTIONS.chrt);
      return command(args, positional(args, o.at));
    }
    case 'taskset': {
      const o = options(args, WRAPPER_OPTIONS.taskset);
      return command(args, positional(args, o.at));
    }
    case 'timeout': {
      const o = options(args, WRAPPER_OPTIONS.timeout);
      return command(args, positional(args, o.at));
    }
    case 'xargs':
      return xargs(args);
    case 'watch':
      return watch(args);
    case 'flock':
      return flock(args);
    case 'find':
      return find(args);
    case 'declare':
    case 'typeset':
    case 'local':
    case 'export':
    case 'readonly':
      declaration(args);
      return NOTHING;
    case 'read':
    case 'unset':
    case 'mapfile':
    case 'readarray':
      if (base !== 'unset' && args.some((w) => w.text === '-C' || /^-[a-zA-Z]*C/.test(w.text))) fail(`${base} -C runs a callback`);
      names(args, `${base} of a name only known when it runs`);
      return NOTHING;
    case 'getopts':
      if (args[1]) names([args[1]], 'getopts of a subscript');
      return NOTHING;
    case 'printf':
      if (args[0]?.text.startsWith('-v')) names([args[0].text === '-v' ? (args[1] ?? lit('')) : lit(args[0].text.slice(2))], 'printf -v of a subscript');
      return NOTHING;
    case 'wait':
      for (let i = 0; i < args.length; i++) if (args[i].text === '-p') names([args[i + 1] ?? lit('')], 'wait -p of a subscript');
      return NOTHING;
    case 'shopt':
      if (args.some((w) => !w.literal || w.text === 'expand_aliases')) fail('shopt expand_aliases');
      return NOTHING;
    case 'set':
      if (args.some((w) => !w.literal && w.text.startsWith('-'))) fail('set of options only known when it runs');
      return NOTHING;
    case 'test':
    case '[':
      testWords(args);
      return NOTHING;
    default:
      return NOTHING;
  }
}
