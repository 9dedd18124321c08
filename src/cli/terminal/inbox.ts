import type { InboxEntry } from '../../features/inbox/schemas.js';
import type { Api } from './api.js';
import { type Approval, askApproval } from './approval.js';
import { keyArgument, short } from './format.js';
import { type Answer, askQuestions, type Question } from './question.js';
import { ChatScreen } from './screen.js';
import { clean, type Style } from './style.js';

/** `agentsvc inbox`: what waits on you (GET /api/inbox), and answering it in place (docs/inbox.md). */

/** An item of GET /api/inbox (its schema: src/features/inbox/schemas.ts), with what it asks typed. */
export interface InboxItem extends InboxEntry {
  questions?: Question[];
  arguments?: unknown;
  rule?: Approval['rule'];
  source?: string;
  options?: string[];
}

export const fetchInbox = (api: Api) => api.json<{ items: InboxItem[]; total: number }>('GET', '/api/inbox?limit=200');

export function answerItem(api: Api, item: Pick<InboxItem, 'session_id' | 'tool_call_id'>, a: Pick<Answer, 'selections' | 'custom'>) {
  const body = { session_id: item.session_id, selections: a.selections, custom: a.custom };
  return api.json<{ session_id: string; run_id: string }>('POST', `/api/inbox/${encodeURIComponent(item.tool_call_id)}/answer`, body);
}

function age(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** What an item asks, on one line. */
export function asked(i: InboxItem): string {
  if (i.kind === 'approval') return `Allow ${i.tool_name} ${keyArgument(i.tool_name, JSON.stringify(i.arguments ?? {}), 50)}?`;
  return i.questions?.map((q) => q.question).join(' / ') ?? '';
}

/** One line per item: age, kind, session, what it asks, and its timeout when it has one. */
export function inboxLines(items: InboxItem[], s: Style, width = 100): string[] {
  if (!items.length) return [s.gray('nothing waits for you')];
  return items.map((i, n) => {
    const timeout = i.timeout_at ? s.gray(` (${i.on_timeout} in ${age(new Date().toISOString(), Date.parse(i.timeout_at))})`) : '';
    const head = `${s.cyan(`${n + 1}.`)} ${s.gray(age(i.asked_at).padStart(3))} ${i.kind === 'approval' ? s.yellow('approval') : s.green('question')} `;
    const title = short(clean(i.session_intent || i.session_id), 30);
    return `${head}${s.bold(title)} · ${short(clean(asked(i)), Math.max(20, width - title.length - 30))}${timeout}`;
  });
}

/** The picker label of an item. */
const label = (i: InboxItem) => `${short(clean(i.session_intent || i.session_id), 30)} · ${short(clean(asked(i)), 60)}`;

/**
 * The inbox on the chat's screen: pick an item with the arrow keys (the chat's picker), answer it
 * with the chat's own question and approval menus, then the next; Ctrl-D or "q" ends.
 */
export async function interactiveInbox(api: Api, s: Style): Promise<{ answered: number; empty: boolean }> {
  let answered = 0;
  let empty = false;
  let pending: ((reply: string | null) => void) | null = null;
  const reply = (r: string | null) => {
    const p = pending;
    pending = null;
    p?.(r);
  };
  const screen = new ChatScreen(s, () => [], () => [], [], { submit: (t) => reply(t), interrupt: () => reply(null), escape: () => false, eof: () => reply(null), expand: () => {} });
  const print = (l: string) => screen.transcript.write(`${l}\n`);
  const ask = (_prompt: string, choices?: string[]) =>
    new Promise<string | null>((resolve) => {
      screen.pick(choices?.length ? choices : null);
      pending = (r) => {
        screen.pick(null);
        if (r !== null) print(s.gray(`› ${r}`));
        resolve(r);
      };
    });
  screen.start();
  try {
    for (;;) {
      const { items } = await fetchInbox(api);
      // Nothing left: said after the screen is gone (its last frame may not be drawn).
      if (!items.length) {
        empty = true;
        break;
      }
      print(s.bold(`Inbox: ${items.length} waiting`));
      for (const l of inboxLines(items, s, screen.tui.terminal.columns)) print(l);
      print(s.gray('pick one with ↑↓ and Enter (or type its number); q or Ctrl-D to leave'));
      const r = await ask('', items.map(label));
      if (r === null || /^q(uit)?$/i.test(r.trim())) break;
      const n = Number(r.trim());
      const item = Number.isInteger(n) && n >= 1 && n <= items.length ? items[n - 1] : null;
      if (!item) {
        print(s.red(`  ${r.trim()} is not an item (1-${items.length})`));
        continue;
      }
      const io = { ask, print };
      const answer =
        item.kind === 'approval'
          ? await askApproval(item.tool_call_id, { type: 'approval', ...item } as Approval, io, s)
          : await askQuestions(item.tool_call_id, item.questions ?? [], io, s);
      if (!answer) break;
      try {
        await answerItem(api, item, answer);
        answered++;
        print(s.green(`  answered; the session goes on`));
      } catch (e) {
        print(s.red(`  ${(e as Error).message}`));
      }
    }
  } finally {
    screen.stop();
  }
  return { answered, empty };
}
