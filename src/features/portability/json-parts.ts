import { AppError } from '../../platform/server/errors.js';

/**
 * The JSON parts of an uploaded archive read a record at a time: `turns.jsonl` a line at a time and
 * the `*.json` arrays an element at a time, each record parsed with JSON.parse on its own bytes. A
 * part is never held whole (an 8.6 MB archive took the service from 150 to 1,050 MiB held whole),
 * and one record is at most MAX_RECORD_BYTES, so no parse holds the event loop for long.
 *
 * Written by hand rather than with a streaming JSON library: the archive is hostile input (which
 * stream-json, the maintained one, says it is not made for), and splitting an array at its
 * top-level commas is all that is needed; the bytes of a record go to V8's own parser.
 */

/** A turn (or task, memory, ...) over this is refused: ~40 ms of JSON.parse. Exports hold far less. */
export const MAX_RECORD_BYTES = 16 << 20;
/** Nesting in a record, as deep as any export goes and then some. */
const MAX_DEPTH = 256;

export const invalidArchive = (why: string) => new AppError(422, 'INVALID_ARCHIVE', `not a session archive this server can import: ${why}`);

const isSpace = (b: number) => b === 32 || b === 10 || b === 13 || b === 9;

function blank(buf: Buffer): boolean {
  for (const b of buf) if (!isSpace(b)) return false;
  return true;
}

/** A record's bytes as they arrive across chunks, bounded. */
class Bounded {
  private parts: Buffer[] = [];
  size = 0;

  constructor(private readonly what: string) {}

  add(bytes: Buffer) {
    if (!bytes.length) return;
    this.size += bytes.length;
    if (this.size > MAX_RECORD_BYTES) throw invalidArchive(`${this.what}: a record over ${MAX_RECORD_BYTES} bytes`);
    this.parts.push(bytes);
  }

  take(): Buffer {
    const all = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
    this.parts = [];
    this.size = 0;
    return all;
  }
}

/** The non-blank lines of a part, as bytes (bounded each). */
export async function* lineBytes(src: AsyncIterable<Buffer>, name: string): AsyncGenerator<Buffer> {
  const line = new Bounded(name);
  for await (const chunk of src) {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      line.add(chunk.subarray(start, nl));
      const bytes = line.take();
      if (!blank(bytes)) yield bytes;
      start = nl + 1;
    }
    line.add(chunk.subarray(start));
  }
  const last = line.take();
  if (last.length && !blank(last)) yield last;
}

function parse(bytes: Buffer, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw invalidArchive(`${what} is not JSON`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw invalidArchive(`${what}: a record is not a JSON object`);
  return v as Record<string, unknown>;
}

/** `turns.jsonl`: one object a line. */
export async function* jsonLines(src: AsyncIterable<Buffer>, name: string): AsyncGenerator<Record<string, unknown>> {
  for await (const bytes of lineBytes(src, name)) yield parse(bytes, `${name} (a line)`);
}

const OPEN = 0; // before `[`
const FIRST = 1; // after `[`: an element or `]`
const NEXT = 2; // after `,`: an element
const IN = 3; // inside an element, up to the `,` or `]` that ends it
const DONE = 4; // after `]`: only white space

/** A `*.json` part: a top-level array of objects, one element at a time. An empty part is []. */
export async function* jsonArray(src: AsyncIterable<Buffer>, name: string): AsyncGenerator<Record<string, unknown>> {
  const element = new Bounded(name);
  let state = OPEN;
  let depth = 0;
  let inString = false;
  let escaped = false;
  const bad = (why: string) => invalidArchive(`${name}: ${why}`);
  for await (const chunk of src) {
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (state === IN) {
        if (inString) {
          if (escaped) escaped = false;
          else if (b === 92) escaped = true;
          else if (b === 34) inString = false;
          continue;
        }
        if (b === 34) inString = true;
        else if (b === 123 || b === 91) {
          if (++depth > MAX_DEPTH) throw bad(`nested deeper than ${MAX_DEPTH}`);
        } else if (b === 125 || b === 93) {
          if (depth > 0) depth--;
          else if (b === 93) {
            element.add(chunk.subarray(start, i));
            yield parse(element.take(), name);
            state = DONE;
          } else throw bad('not a JSON array');
        } else if (b === 44 && depth === 0) {
          element.add(chunk.subarray(start, i));
          yield parse(element.take(), name);
          state = NEXT;
        }
        continue;
      }
      if (isSpace(b)) continue;
      if (state === OPEN && b === 91) state = FIRST;
      else if (state === FIRST && b === 93) state = DONE;
      else if (state === FIRST || state === NEXT) {
        state = IN;
        start = i;
        i--; // read this byte again as the element's first
      } else throw bad(state === DONE ? 'data after the array' : 'not a JSON array');
    }
    if (state === IN) element.add(chunk.subarray(start));
  }
  if (state !== DONE && state !== OPEN) throw bad('the array is cut short');
}

/** Counts the non-blank lines of a part as its chunks go by (the preview's turn count), holding none. */
export class LineCounter {
  lines = 0;
  private content = false;

  push(chunk: Buffer) {
    for (const b of chunk) {
      if (b === 10) {
        if (this.content) this.lines++;
        this.content = false;
      } else if (!this.content && !isSpace(b)) this.content = true;
    }
  }

  end(): number {
    if (this.content) this.lines++;
    this.content = false;
    return this.lines;
  }
}
