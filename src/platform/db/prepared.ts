import { createHash } from 'node:crypto';

/** A text is named at its this-th run: one-off statements (admin, migrations, imports) stay unnamed. */
const NAME_AT_RUN = 3;
/** At most this many texts are named: texts built with a variable number of placeholders stay bounded. */
const MAX_NAMED = 200;
/** Texts counted but not yet named; the counts start over past this many. */
const MAX_COUNTED = 5000;

/**
 * Which statement texts run as named prepared statements. PostgreSQL parses and plans a named
 * statement once per connection instead of at every run; the plan of the run claim alone took
 * 0.36 ms of its 0.6 ms. Run starts (bench/streaming.ts paced=200 burst= idle=0 n=1): PostgreSQL
 * CPU 0.8-0.9 -> 0.5-0.6 s for 200 chat:send.
 *
 * A server that refuses a named statement gets the statement again, unnamed: a pooler in
 * transaction mode that does not keep them (`does not exist`, `already exists`) turns naming off
 * for good; a plan whose result type changed under it (a column added by a migration of another
 * node: `cached plan must not change result type`) leaves that one text unnamed from then on. Both
 * errors come before the statement executes, so running it again does it once.
 */
export class StatementNames {
  private readonly counts = new Map<string, number>();
  private readonly names = new Map<string, string>();
  private readonly unnamed = new Set<string>();
  private off = false;

  /** The name to run `text` under, or undefined to run it unnamed. */
  name(text: string): string | undefined {
    if (this.off) return undefined;
    const known = this.names.get(text);
    if (known || this.unnamed.has(text) || this.names.size >= MAX_NAMED) return known;
    const n = (this.counts.get(text) ?? 0) + 1;
    if (n < NAME_AT_RUN) {
      if (this.counts.size >= MAX_COUNTED) this.counts.clear();
      this.counts.set(text, n);
      return undefined;
    }
    this.counts.delete(text);
    const name = `agentsvc_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    this.names.set(text, name);
    return name;
  }

  /** Whether `e`, from running `text` named, means it must run again unnamed (and it will be from now on). */
  refused(text: string, e: unknown): boolean {
    const { code, message } = (e ?? {}) as { code?: string; message?: string };
    if (code === '26000' || code === '42P05') {
      this.off = true;
      return true;
    }
    if (code === '0A000' && /cached plan must not change result type/.test(message ?? '')) {
      this.names.delete(text);
      this.unnamed.add(text);
      return true;
    }
    return false;
  }
}

/** At most this many texts keep their positional form; others are converted at each run. */
const MAX_POSITIONAL = 5000;

/**
 * A text with `?` placeholders as PostgreSQL takes it (`$1`, `$2`, ...), converted once per text.
 * null when knex must bind it: its `??` (an identifier) or `\?` (a literal `?`) forms, or a number
 * of placeholders other than the values given (knex answers that with its error).
 */
export class PositionalTexts {
  private readonly known = new Map<string, { text: string | null; count: number }>();

  positional(query: string, values: number): string | null {
    let k = this.known.get(query);
    if (!k) {
      let count = 0;
      const text = /\?\?|\\\?/.test(query) ? null : query.replace(/\?/g, () => `$${++count}`);
      k = { text, count };
      if (this.known.size < MAX_POSITIONAL) this.known.set(query, k);
    }
    return k.count === values ? k.text : null;
  }
}
