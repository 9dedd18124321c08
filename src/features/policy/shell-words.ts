/**
 * One word of a shell command line as the Bash-rule checker reads it (docs/policy-commands.md):
 * the Word type and the Unsplittable error that makes a line match every rule. shell.ts reads the
 * words of a parsed line; shell-commands.ts reads wrappers' arguments as Words.
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
