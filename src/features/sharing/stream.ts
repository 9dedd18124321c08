import { setImmediate as nextTurn } from 'node:timers/promises';
import { PAGE_TURNS, turnPages } from '../../core/conversation/pages.js';
import { primed, turnsJson } from '../../core/events/turns-json.js';
import type { Turn } from '../../core/conversation/turns.js';
import { NO_MESSAGES, PAGE_END, pageStart, turnHtml, type Md } from './render.js';

/**
 * A share streams (issue #25): the branch is read a page at a time, each turn masked and written
 * as it comes, so a reply holds one page, not the session (100k turns were 131.7 MiB of JSON and
 * +1.4 GiB of RSS per request, for anyone holding the link). The bytes are those of the whole-list
 * code before it: the JSON is the response schema's serialisation, the page the same HTML.
 */

/** Rendering yields the event loop once it has held it this long within a page (markdown is slow). */
const SLICE_MS = 20;

/** `{intent, turns}` as the route's response schema serialised it whole; a chunk per page. */
export async function* shareJson(intent: string, pages: AsyncIterable<Turn[]>): AsyncGenerator<string> {
  // The head goes out with the first page, so a failed first read still answers an error body.
  let head = `{"intent":${JSON.stringify(intent)},"turns":`;
  for await (const chunk of turnsJson(pages)) {
    yield head + chunk;
    head = '';
  }
  yield '}';
}

/** A top-level turn held until every turn nested under it (at any depth) has been read. */
interface Root {
  turn: Turn;
  /** The sequence of the last turn of its subtree known so far. */
  until: number;
  /** Its calls (and its sub-agents' calls) that started turns. */
  calls: string[];
  shown: boolean;
}

/**
 * The share page (./render.ts), a chunk per page of turns. Sub-agents' turns nest under the call
 * that started them, which came earlier: a top-level turn is written once the branch's last turn
 * started by any call of its subtree has been read (`lastChild`, from TurnStore.forkIndex), so only
 * the turns of an unfinished subtree are held. `count` is every turn of the branch.
 */
export async function* sharePage(intent: string, expiresAt: Date, count: number, lastChild: Map<string, number>, pages: AsyncIterable<Turn[]>, md: Md): AsyncGenerator<string> {
  const queue: Root[] = [];
  const rootOf = new Map<string, Root>();
  const children = new Map<string, Turn[]>();
  let shown = 0;
  let bodyChars = 0;
  const write = (r: Root): string => {
    for (const id of r.calls) rootOf.delete(id);
    const html = r.shown ? `${shown++ ? '\n' : ''}${turnHtml(r.turn, children, md, 'Agent')}` : '';
    for (const id of r.calls) children.delete(id);
    bodyChars += html.length;
    return html;
  };
  let chunk = pageStart(intent, count, expiresAt);
  let slice = performance.now();
  for await (const page of pages) {
    slice = performance.now();
    for (const t of page) {
      if (performance.now() - slice > SLICE_MS) {
        yield chunk;
        chunk = '';
        await nextTurn();
        slice = performance.now();
      }
      let root: Root | undefined;
      if (!t.parent_fork_tool_call_id) {
        root = { turn: t, until: t.sequence, calls: [], shown: !t.deprecated };
        queue.push(root);
      } else {
        // A turn whose call is not on the branch never showed.
        root = rootOf.get(t.parent_fork_tool_call_id);
        if (!root) continue;
        if (root.shown) {
          const list = children.get(t.parent_fork_tool_call_id);
          if (list) list.push(t);
          else children.set(t.parent_fork_tool_call_id, [t]);
        }
      }
      for (const c of t.tool_calls) {
        const last = lastChild.get(c.id);
        if (last === undefined) continue;
        rootOf.set(c.id, root);
        root.calls.push(c.id);
        root.until = Math.max(root.until, last);
      }
      while (queue.length && queue[0].until <= t.sequence) chunk += write(queue.shift()!);
    }
    yield chunk;
    chunk = '';
  }
  while (queue.length) chunk += write(queue.shift()!);
  yield `${chunk}${bodyChars ? '' : NO_MESSAGES}${PAGE_END}`;
}

export { PAGE_TURNS, primed, turnPages };
