import { setImmediate as nextTurn } from 'node:timers/promises';
import type { TurnStore } from './turn-store.js';
import type { Turn } from './turns.js';

/**
 * A conversation read a page at a time (issue #25): a session of 100k turns is 131.7 MiB of JSON,
 * and reading it whole held the service's memory (GiBs) and its event loop (seconds) for one
 * request. Readers that send a whole conversation (GET .../messages, shares) stream these pages
 * (as JSON: ../events/turns-json.ts).
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
