import { createRequire } from 'node:module';
import { Language, Parser } from 'web-tree-sitter';
import { runs } from './shell-commands.js';
import { pipesAsLists, plainCommands } from './shell-plain-line.js';
import { commandsOf, Merged } from './shell-tree-walk.js';
import { lit, Unsplittable, type Word } from './shell-words.js';

/**
 * The simple commands of a Bash command line, for Bash rules (docs/policy-commands.md). The line is
 * parsed by tree-sitter's bash grammar (web-tree-sitter runs it as WebAssembly, so nothing is
 * compiled at install) and read as a stated subset of the shell: literal words and quoting, pipes
 * and lists, subshells and groups, `if`/`for`/`while`/`case`, functions (their bodies), command
 * and process substitution, redirections and here-documents, assignments, and the wrappers of
 * shell-commands.ts. Every node of the tree must be of a type the subset knows; every simple
 * command is one target, wherever it sits, and what a wrapper runs (`sudo -u x cmd`, `sh -c '...'`)
 * is one more, `/usr/bin/curl` also read as `curl`. This file holds the parser, its cache and the
 * following of wrappers; plain lines skip the grammar (shell-plain-line.ts), the tree is read by
 * shell-tree-walk.ts, one word by shell-words.ts.
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
