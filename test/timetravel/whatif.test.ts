import t from 'tap';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import type { TestApp } from '../helpers/app.js';
import { request } from '../helpers/socket.js';

/** chat:send with whatif (docs/time-travel.md): rerun from a step on a new branch, quotes, deprecated entries. */

function script(body: any) {
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { text: ['done'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'one') return { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'v1\n' } }] };
  if (user === 'two') return { toolCalls: [{ name: 'Edit', args: { file_path: 'a.txt', old_string: 'v1', new_string: 'v2' } }] };
  if (user === 'three') return { toolCalls: [{ name: 'Write', args: { file_path: 'c.txt', content: 'sea\n' } }] };
  return { text: [`echo: ${user}`] };
}

const get = async (app: TestApp, path: string) => (await app.api(path)).json();
const userTexts = async (app: TestApp, sid: string) =>
  ((await get(app, `/api/sessions/${sid}/messages`)) as any[]).filter((m) => m.role === 'user' && m.loop_id === 'root').map((m) => m.blocks[0]?.content);
const file = async (app: TestApp, sid: string, p: string) => {
  const r = await app.api(`/api/sessions/${sid}/files/${p}`);
  return r.status === 200 ? r.text() : null;
};

t.test('what-if reruns from a step on a new branch; the old branch stays', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = script;
  let ends = 0;
  const send = async (payload: Record<string, unknown>) => {
    const ack = await request(sock, 'chat:send', { session_id: sid, ...payload });
    if (ack.ok) await untilEnd(seen, sid, 20_000, ++ends);
    return ack;
  };
  for (const message of ['one', 'two', 'three']) t.equal((await send({ message })).ok, true, message);
  t.equal(await file(app, sid, 'a.txt'), 'v2\n');
  const before = await get(app, `/api/sessions/${sid}/messages`);

  // Bad what-ifs change nothing.
  for (const [what, whatif] of [
    ['step beyond the last', { from_step: 9 }],
    ['negative step', { from_step: -1 }],
    ['unknown entry', { from_step: 1, deprecate_entry_ids: ['entry_nope'] }],
    ['entry after the kept steps', { from_step: 1, deprecate_entry_ids: [before.at(-1).id] }],
    ['unknown field', { from_step: 1, colour: 'red' }],
  ] as const) {
    const ack = await request(sock, 'chat:send', { session_id: sid, message: 'x', whatif });
    t.match(ack, { ok: false, error: { code: 'VALIDATION_ERROR' } }, what);
  }
  t.same(await get(app, `/api/sessions/${sid}/messages`), before, 'nothing changed');

  // Rerun step 2 with another message and a quote: steps 1 stays, files as before step 2.
  const n = model.requests.length;
  const firstAssistant = before.find((m: any) => m.role === 'assistant');
  const ack = await send({ message: 'two, differently', whatif: { from_step: 1, quotes: ['keep it short'], deprecate_entry_ids: [firstAssistant.id] } });
  t.equal(ack.ok, true);
  t.same(await userTexts(app, sid), ['one', '> keep it short\n\ntwo, differently'], 'steps 1 and the new message');
  t.equal(await file(app, sid, 'a.txt'), 'v1\n', 'files as at the checkpoint of step 2');
  t.equal(await file(app, sid, 'c.txt'), null, 'the third chat file is not on this branch');
  const msgs = await get(app, `/api/sessions/${sid}/messages`);
  t.equal(msgs.find((m: any) => m.id === firstAssistant.id)?.deprecated, true, 'the deprecated entry is still listed, marked');
  const sent = model.requests[n].messages;
  t.same(
    sent.filter((m: any) => m.role === 'user').map((m: any) => m.content),
    ['one', '> keep it short\n\ntwo, differently'],
  );
  t.notOk(
    sent.some((m: any) => m.role === 'tool' || m.tool_calls),
    'the deprecated turn (its tool call and result) is left out of what the model sees',
  );

  // Empty message: step 1's own text again.
  t.equal((await send({ message: '', whatif: { from_step: 0 } })).ok, true);
  t.same(await userTexts(app, sid), ['one']);
  t.equal(await file(app, sid, 'a.txt'), 'v1\n');

  // The original branch is still there.
  const cps = await get(app, `/api/sessions/${sid}/checkpoints`);
  t.equal(cps.length, 1);
  const main = await app.service.db.em().getConnection().execute(`select id from checkpoints where session_id = ? and label = 'three'`, [sid]);
  const back = await (await app.api(`/api/sessions/${sid}/switch-branch`, { method: 'POST', json: { checkpoint_id: main[0].id } })).json();
  t.equal(back.branch_id, 'main');
  t.same(await userTexts(app, sid), ['one', 'two', 'three'], 'the first branch, whole');
  t.equal(await file(app, sid, 'a.txt'), 'v2\n');
  t.equal(await file(app, sid, 'c.txt'), 'sea\n');
});
