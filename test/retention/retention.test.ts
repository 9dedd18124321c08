import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';

/**
 * Retention (docs/operations.md): AGENTSVC_RETENTION_DAYS deletes unpinned sessions not updated for that
 * long, with their files and checkpoint stores; AGENTSVC_CHECKPOINT_KEEP keeps the newest N
 * checkpoints of each branch, and always each branch's head and the checkpoint a branch forked from.
 */
t.setTimeout(240_000);

function script(body: any) {
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { text: ['done'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  return { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: `${user}\n` } }] };
}

t.test('old unpinned sessions go with their files; newest checkpoints per branch stay', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_RETENTION_DAYS: '30', AGENTSVC_CHECKPOINT_KEEP: '2' });
  model.fallback = script;
  const me = await (await app.api('/api/auth/me')).json();
  const [old, pinned, fresh] = [await createSession(app), await createSession(app), await createSession(app)];

  const { sock, seen } = await watch(app, old);
  await request(sock, 'session:subscribe', { session_id: fresh });
  // Two chats: the second one's checkpoint holds the file the first wrote (a store is made then).
  for (const [i, message] of ['old1', 'old2'].entries()) {
    t.equal((await request(sock, 'chat:send', { session_id: old, message })).ok, true);
    await untilEnd(seen, old, 30_000, i + 1);
  }
  for (const [i, message] of ['c1', 'c2', 'c3'].entries()) {
    t.equal((await request(sock, 'chat:send', { session_id: fresh, message })).ok, true, message);
    await untilEnd(seen, fresh, 30_000, i + 1);
  }
  // The newest 2 of the branch are kept as checkpoints come: c1 went when c3 came.
  const main = await (await app.api(`/api/sessions/${fresh}/checkpoints`)).json();
  t.same(
    main.map((c: { label: string }) => c.label),
    ['c2', 'c3'],
  );
  const rw = await (await app.api(`/api/sessions/${fresh}/rewind`, { method: 'POST', json: { checkpoint_id: main[0].checkpoint_id } })).json();
  t.match(rw, { branch_id: /^br_/ }, 'rewound to c2 on a new branch');
  t.equal((await request(sock, 'chat:send', { session_id: fresh, message: 'b1' })).ok, true);
  await untilEnd(seen, fresh, 30_000, 4);
  t.equal((await (await app.api(`/api/sessions/${pinned}/pin`, { method: 'PATCH', json: { pinned: true } })).json()).is_pinned, true);

  const oldFolder = join(app.config.workspaces, me.id, old);
  const oldStore = join(app.config.workspaces, '.snapshots', me.id, `${old}.git`);
  t.ok(existsSync(oldFolder), 'the old session has files');
  t.ok(existsSync(oldStore), 'and a checkpoint store');
  await app.service.db.sql("update sessions set updated_at = now() - interval '31 days' where id in (?, ?)", [old, pinned]);
  await app.service.db.sql("update sessions set updated_at = now() - interval '29 days' where id = ?", [fresh]);

  const swept = await app.service.retention.sweep();
  t.equal(swept.sessions, 1, 'one session removed');
  t.equal((await app.api(`/api/sessions/${old}`)).status, 404, 'the old session is gone');
  t.notOk(existsSync(oldFolder), 'with its folder');
  t.notOk(existsSync(oldStore), 'and its checkpoint store');
  t.equal((await app.api(`/api/sessions/${pinned}`)).status, 200, 'a pinned session stays, however old');
  t.equal((await app.api(`/api/sessions/${fresh}`)).status, 200, 'a session updated within the period stays');

  t.equal(swept.checkpoints, 0, 'nothing more to prune: c1 went when c3 came');
  const all = (await app.service.db.sql<{ id: string; branch_id: string; label: string }>('select id, branch_id, label from checkpoints where session_id = ? order by sequence', [fresh])).map(
    (c) => `${c.branch_id === 'main' ? 'main' : 'branch'}:${c.label}`,
  );
  t.same(all, ['main:c2', 'main:c3', 'branch:b1'], "c1 pruned; main's head c3, the fork point c2 and the branch's head b1 kept");
  const again = await (await app.api(`/api/sessions/${fresh}/rewind`, { method: 'POST', json: { checkpoint_id: main[0].checkpoint_id } })).json();
  t.equal(again.restored_files, 1, 'a rewind to the kept fork point still works');
  t.same(await app.service.retention.sweep(), { sessions: 0, checkpoints: 0 }, 'a second sweep finds nothing more');
});

t.test('off by default: nothing is removed', async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  await app.service.db.sql("update sessions set updated_at = now() - interval '3650 days' where id = ?", [sid]);
  t.same(await app.service.retention.sweep(), { sessions: 0, checkpoints: 0 });
  t.equal((await app.api(`/api/sessions/${sid}`)).status, 200);
});
