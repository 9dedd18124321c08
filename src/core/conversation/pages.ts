import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { TurnSchema } from '../events/catalogue.js';
import type { TurnStore } from './turn-store.js';
import type { Turn } from './turns.js';

/**
 * A conversation read a page at a time (issue #25): a session of 100k turns is 131.7 MiB of JSON,
 * and reading it whole held the service's memory (GiBs) and its event loop (seconds) for one
 * request. Readers that send a whole conversation (GET .../messages, shares) stream these pages.
 */

/** Turns per read; a page of the 100k-turn bench session is about 0.26 MiB of JSON. */
export const PAGE_TURNS = 200;

/**
 * The branch's turns in order (up to sequence `through`), a masked page at a time, the event loop
 * free between pages.
 */
export async function* turnPages(store: TurnStore, sessionId: string, branchId: string | null, mask: <T>(v: T) => T, through = Infinity, pageTurns = PAGE_TURNS): AsyncGenerator<Turn[]> {
  let after = -2_147_483_648;
  for (;;) {
    const page = await store.page(sessionId, branchId, after, pageTurns);
    const upto = page.filter((s) => s.turn.sequence <= through);
    if (upto.length) yield upto.map((s) => mask(s.turn));
    if (page.length < pageTurns || upto.length < page.length) return;
    after = page[page.length - 1].turn.sequence;
    await nextTurn();
  }
}

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
