import { Readable } from 'node:stream';
import type { Turn } from '../conversation/turns.js';
import { TurnSchema } from './catalogue.js';

/**
 * Turns on the wire a page at a time (../conversation/pages.ts reads them): the bytes the response
 * schema's serialiser wrote for the whole list, so a streamed reply is the reply it replaced.
 */

/** A JSON array of turns as the response schema serialised it whole (`z.array(TurnSchema)`); a chunk per page. */
export async function* turnsJson(pages: AsyncIterable<Turn[]>): AsyncGenerator<string> {
  let head = '[';
  for await (const page of pages) {
    if (!page.length) continue;
    yield head + page.map((t) => JSON.stringify(TurnSchema.parse(t))).join(',');
    head = ',';
  }
  yield head === ',' ? ']' : '[]';
}

/**
 * A stream of `chunks` whose first chunk is read now: a failure before the first byte (the first
 * read of the database) rejects here and gets the route's ordinary error answer. Destroying the
 * stream (the client went away) returns the generator, so its reads stop.
 */
export async function primed(chunks: AsyncGenerator<string>): Promise<Readable> {
  const first = await chunks.next();
  return Readable.from(
    (async function* () {
      try {
        if (!first.done) yield first.value;
        yield* chunks;
      } finally {
        // Destroyed before `yield*` began: `chunks` was started by the first read and is returned here.
        await chunks.return(undefined);
      }
    })(),
    { objectMode: false },
  );
}
