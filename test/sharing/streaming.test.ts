import t from 'tap';
import type { Turn } from '../../src/core/conversation/turns.js';
import { TurnSchema } from '../../src/core/events/catalogue.js';
import { shareMarkdown } from '../../src/features/sharing/markdown.js';
import { MASK, redactor } from '../../src/features/sharing/redact.js';
import { NO_MESSAGES, PAGE_END, pageStart, turnHtml } from '../../src/features/sharing/render.js';
import { PAGE_TURNS, primed } from '../../src/features/sharing/stream.js';
import { build } from '../helpers/app.js';
import { storedTurn } from '../helpers/turns.js';
import { createSession } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The share routes stream a page of turns at a time (issue #25) and answer the bytes the
 * whole-list code answered: expected values are built here the way that code built them, from the
 * whole branch in memory (`TurnStore.list`, masked, serialised or rendered at once).
 */

const SECRET = 'line one of "the" key\nline two \\ of-the-key-0042';
const TURNS = PAGE_TURNS * 2 + 234;

let n = 0;
function turn(sequence: number, role: Turn['role'], text: string, extra: Partial<Turn> = {}): Turn {
  return storedTurn(`${++n}`.padStart(6, '0'), sequence, role, text, extra);
}
const call = (id: string, tool_name: string, args: object, result: string) => ({
  id,
  tool_name,
  display_name: tool_name,
  arguments: JSON.stringify(args),
  status: 'done' as const,
  result,
  duration_ms: 5,
  pending_question_ref: null,
});

/**
 * A session of TURNS turns: user and assistant turns with markdown and tool calls, empty turns,
 * sub-agents (nested two deep) whose turns cross a page boundary, one sub-agent whose turns come
 * after the next top-level turn (a background agent), and the secret in a turn on the last page.
 */
function conversation(): Turn[] {
  const out: Turn[] = [];
  let seq = 0;
  const push = (role: Turn['role'], text: string, extra: Partial<Turn> = {}) => out.push(turn(seq++, role, text, extra));
  while (seq < TURNS) {
    if (seq === PAGE_TURNS - 3) {
      // A sub-agent that starts another: its turns span the first page boundary.
      push('assistant', 'Two helpers.', { tool_calls: [call('tc_outer', 'Agent', { description: 'outer helper', prompt: 'go' }, 'outer done')] });
      push('user', 'outer task', { parent_fork_tool_call_id: 'tc_outer' });
      push('assistant', 'I start an inner helper.', { parent_fork_tool_call_id: 'tc_outer', tool_calls: [call('tc_inner', 'Agent', { description: 'inner helper', prompt: 'go' }, 'inner done')] });
      for (let i = 0; i < 6; i++) push('assistant', `inner step ${i} with \`code\``, { parent_fork_tool_call_id: 'tc_inner' });
      push('assistant', 'outer finished', { parent_fork_tool_call_id: 'tc_outer' });
    } else if (seq === PAGE_TURNS + 40) {
      // A background sub-agent: its turns come after the next top-level turns.
      push('assistant', 'In the background.', { tool_calls: [call('tc_bg', 'Agent', { description: 'background', prompt: 'go' }, 'started')] });
      push('user', 'meanwhile');
      push('assistant', '');
      push('assistant', 'background step', { parent_fork_tool_call_id: 'tc_bg' });
      push('assistant', 'background step 2', { parent_fork_tool_call_id: 'tc_bg' });
    } else if (seq === TURNS - 20) {
      push('assistant', `The key is ${SECRET}.`, { tool_calls: [call('tc_key', 'Bash', { command: `echo '${SECRET}'` }, SECRET)] });
    } else if (seq % 7 === 0) {
      push('assistant', '', {});
    } else if (seq % 2) {
      push('user', `question ${seq} <b>not html</b>`);
    } else {
      push('assistant', `## Answer ${seq}\n\n- a **list**\n\n\`\`\`js\nconst x = ${seq};\n\`\`\``, {
        blocks: [
          { type: 'thinking', content: `thinking ${seq}`, tool_call_id: null, tool_name: null, display_name: null },
          { type: 'text', content: `## Answer ${seq}`, tool_call_id: null, tool_name: null, display_name: null },
        ],
        tool_calls: seq % 4 ? [] : [call(`tc_${seq}`, 'Read', { file_path: `f${seq}.txt` }, `line ${seq}`)],
      });
    }
  }
  return out;
}

/** The page as the whole-list renderer made it: every turn of the branch in memory at once. */
async function wholePage(intent: string, turns: Turn[], expires: Date): Promise<string> {
  const md = await shareMarkdown();
  const children = new Map<string, Turn[]>();
  for (const x of turns) if (x.parent_fork_tool_call_id) children.set(x.parent_fork_tool_call_id, [...(children.get(x.parent_fork_tool_call_id) ?? []), x]);
  const body = turns
    .filter((x) => !x.parent_fork_tool_call_id && !x.deprecated)
    .map((x) => turnHtml(x, children, md, 'Agent'))
    .join('\n');
  return `${pageStart(intent, turns.length, expires)}${body || NO_MESSAGES}${PAGE_END}`;
}

t.test('a long session streams the same JSON and page as whole; secrets masked on a later page; links still end', async (t) => {
  const app = await build(t);
  const intent = `Keys ${SECRET}`;
  const sid = await createSession(app, app.adminKey, { intent, env: { KEY: SECRET } });
  const store = app.service.turns;
  for (const x of conversation()) await store.insert(sid, x);
  const link = await (await app.api(`/api/sessions/${sid}/share`, { method: 'POST', json: {} })).json();

  const mask = redactor([SECRET]);
  const stored = (await store.list(sid)).map((s) => mask(s.turn));
  t.equal(stored.length, TURNS, `${TURNS} turns: three pages of ${PAGE_TURNS}`);

  // Read a page at a time: the whole-list code read the branch in one query (and set a length).
  const page0 = store.page.bind(store);
  let reads = 0;
  store.page = (...a) => {
    reads++;
    return page0(...a);
  };
  const api = await app.api(`/api/share/${link.token}`, { key: null });
  t.equal(api.status, 200);
  t.equal(api.headers.get('content-length'), null, 'streamed');
  t.equal(api.headers.get('content-type'), 'application/json; charset=utf-8');
  t.equal(api.headers.get('cache-control'), 'no-store');
  const json = await api.text();
  t.equal(json, JSON.stringify({ intent: mask(intent), turns: stored.map((x) => TurnSchema.parse(x)) }), 'the JSON, byte for byte');
  t.notOk(json.includes('of-the-key-0042'), 'no part of the secret, on the last page');
  t.ok(JSON.parse(json).turns[TURNS - 20].tool_calls[0].result.includes(MASK));
  t.equal(reads, Math.ceil(TURNS / PAGE_TURNS), 'one read per page');

  const page = await fetch(link.url);
  t.equal(page.status, 200);
  t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  const html = await page.text();
  t.equal(html, await wholePage(mask(intent), stored, new Date(link.expires_at)), 'the page, byte for byte');
  t.notOk(html.includes('of-the-key-0042'));
  t.match(html, /inner step 5/, 'the nested sub-agent across the page boundary');
  t.match(html, /background step 2/, 'a sub-agent whose turns come after the next top-level turn');
  t.ok(html.indexOf('background step 2') < html.indexOf('meanwhile'), 'nested under its call, before the later turn');

  t.equal(reads, 2 * Math.ceil(TURNS / PAGE_TURNS), 'the page reads a page at a time too');

  // A failure before the first byte answers an error body (docs/errors.md), never a cut stream.
  store.page = async () => {
    throw new Error('database gone');
  };
  const failed = await app.api(`/api/share/${link.token}`, { key: null });
  t.equal(failed.status, 500);
  t.match(await failed.json(), { code: String, detail: String });
  store.page = page0;

  t.equal((await app.api(`/api/sessions/${sid}/share/${link.token}`, { method: 'DELETE' })).status, 200);
  const revoked = await app.api(`/api/share/${link.token}`, { key: null });
  t.equal(revoked.status, 404, 'revoked');
  t.match(await revoked.json(), { code: 'NOT_FOUND', detail: String });
  t.equal((await fetch(link.url)).status, 404, 'revoked page');
  const l2 = await (await app.api(`/api/sessions/${sid}/share`, { method: 'POST', json: {} })).json();
  await app.service.db.em().getConnection().execute(`update share_links set expires_at = now() - interval '1 second' where session_id = ? and revoked_at is null`, [sid]);
  t.equal((await app.api(`/api/share/${l2.token}`, { key: null })).status, 404, 'expired');
  t.equal((await fetch(l2.url)).status, 404, 'expired page');
});

t.test('an empty session streams an empty list and the empty page', async (t) => {
  const app = await build(t);
  const sid = await createSession(app, app.adminKey, { intent: 'Nothing yet' });
  const link = await (await app.api(`/api/sessions/${sid}/share`, { method: 'POST', json: {} })).json();
  t.equal(await (await app.api(`/api/share/${link.token}`, { key: null })).text(), '{"intent":"Nothing yet","turns":[]}');
  t.equal(await (await fetch(link.url)).text(), await wholePage('Nothing yet', [], new Date(link.expires_at)));
});

t.test('a reply destroyed (the client went away) returns its generator: the reads stop', async (t) => {
  let made = 0;
  let returned = false;
  async function* chunks() {
    try {
      for (;;) {
        made++;
        yield 'x'.repeat(1 << 20);
      }
    } finally {
      returned = true;
    }
  }
  const body = await primed(chunks());
  t.equal(made, 1, 'the first chunk is read before the reply starts');
  body.once('data', () => body.destroy());
  await waitFor(() => returned, { what: 'the generator to return' });
  t.ok(made <= 3, `stopped after ${made} chunks`);
});
