import t from 'tap';
import Dockerode from 'dockerode';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sessionHostDir } from '../../src/core/files/paths.js';
import { chatFixture, createSession, untilEnd } from '../helpers/chat.js';
import type { TestApp } from '../helpers/app.js';
import { request } from '../helpers/socket.js';
import { needs } from '../helpers/needs.js';

/**
 * Checkpoints, rewind, checkout and switch-branch (docs/time-travel.md): files written and edited over three
 * chats, a rewind to the second that restores conversation and files, a switch back that brings
 * everything back, nothing deleted on the way.
 */

/** Routes on the newest user message; after a tool result, a short answer. */
function script(body: any) {
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { text: ['done'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'one') return { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'v1\n' } }] };
  if (user === 'two')
    return {
      toolCalls: [
        { name: 'Write', args: { file_path: 'b.txt', content: 'bee\n' } },
        { name: 'Edit', args: { file_path: 'a.txt', old_string: 'v1', new_string: 'v2' } },
      ],
    };
  if (user === 'three') return { toolCalls: [{ name: 'Write', args: { file_path: 'dir/c.txt', content: 'sea\n' } }] };
  if (user === 'slow') return { text: Array.from({ length: 200 }, (_, i) => `w${i} `), delayMs: 20 };
  return { text: [`echo ${user}`] };
}

const files = async (app: TestApp, sid: string) => {
  const out: Record<string, string> = {};
  for (const p of ['a.txt', 'b.txt', 'dir/c.txt', 'after.txt']) {
    const r = await app.api(`/api/sessions/${sid}/files/${p}`);
    if (r.status === 200) out[p] = await r.text();
  }
  return out;
};
const userTexts = async (app: TestApp, sid: string) =>
  ((await (await app.api(`/api/sessions/${sid}/messages`)).json()) as any[]).filter((m) => m.role === 'user' && !m.parent_fork_tool_call_id).map((m) => m.blocks[0]?.content);

t.test('three chats, rewind to the second, switch back to the first branch', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = script;
  for (const [i, message] of ['one', 'two', 'three'].entries()) {
    const ack = await request(sock, 'chat:send', { session_id: sid, message });
    t.equal(ack.ok, true, `chat ${message}`);
    await untilEnd(seen, sid, 20_000, i + 1);
  }
  t.same(await files(app, sid), { 'a.txt': 'v2\n', 'b.txt': 'bee\n', 'dir/c.txt': 'sea\n' }, 'after three chats');
  const cps = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  t.equal(cps.length, 3, 'one checkpoint per user message');
  t.same(
    cps.map((c: any) => c.label),
    ['one', 'two', 'three'],
  );
  t.match(cps[0], { checkpoint_id: /^cp_/, branch_id: 'main', files: 0, skipped: [] });
  t.equal(cps[1].files, 1, 'checkpoint two: a.txt (v1) existed before the second chat');
  t.equal(cps[2].files, 2);

  // Read-only checkout: nothing changes.
  const before = await (await app.api(`/api/sessions/${sid}/checkout`, { method: 'POST', json: { checkpoint_id: cps[1].checkpoint_id } })).json();
  t.equal(before.position, 'before');
  t.same(before.files.map((f: any) => [f.path, f.size]), [['a.txt', 3]], 'files at checkpoint two');
  t.same(before.turns.filter((x: any) => x.role === 'user').map((x: any) => x.blocks[0].content), ['one']);
  const end = await (await app.api(`/api/sessions/${sid}/checkout`, { method: 'POST', json: { checkpoint_id: cps[1].checkpoint_id, position: 'turn_end' } })).json();
  t.same(end.turns.filter((x: any) => x.role === 'user').map((x: any) => x.blocks[0].content), ['one', 'two'], 'turn_end: through the run of two');
  t.ok(end.turns.length > before.turns.length);
  t.same(await userTexts(app, sid), ['one', 'two', 'three'], 'checkout changed nothing');

  // Rewind to the second chat.
  const rw = await (await app.api(`/api/sessions/${sid}/rewind`, { method: 'POST', json: { checkpoint_id: cps[1].checkpoint_id } })).json();
  t.match(rw, { session_id: sid, checkpoint_id: cps[1].checkpoint_id, turn_id: cps[1].turn_id, branch_id: /^br_/, restored_files: 1, message: 'two', stopped_background_tasks: 0 });
  t.ok(rw.removed_turns >= 4, `${rw.removed_turns} turns left the view`);
  t.same(await userTexts(app, sid), ['one'], 'the conversation ends before the second message');
  t.same(await files(app, sid), { 'a.txt': 'v1\n' }, 'files as they were before the second chat');
  t.same(
    ((await (await app.api(`/api/sessions/${sid}/checkpoints`)).json()) as any[]).map((c) => c.label),
    ['one'],
    'checkpoints of the new branch',
  );

  // Another path on the new branch; the model sees only this branch.
  const n = model.requests.length;
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'other path' })).ok, true);
  await untilEnd(seen, sid, 20_000, 4);
  writeFileSync(join(sessionHostDir(app.home, (await (await app.api('/api/auth/me')).json()).id, sid), 'after.txt'), 'new branch file');
  const seenByModel = model.requests[n].messages.filter((m: any) => m.role === 'user').map((m: any) => m.content);
  t.same(seenByModel, ['one', 'other path'], 'the model history is the active branch');
  t.same(await userTexts(app, sid), ['one', 'other path']);

  // Switch back to the first branch: conversation and files as they were at its tip.
  const sw = await (await app.api(`/api/sessions/${sid}/switch-branch`, { method: 'POST', json: { checkpoint_id: cps[2].checkpoint_id } })).json();
  t.match(sw, { session_id: sid, branch_id: 'main' });
  t.ok(sw.turns >= 6, `${sw.turns} turns on main`);
  t.same(await userTexts(app, sid), ['one', 'two', 'three'], 'everything back');
  t.same(await files(app, sid), { 'a.txt': 'v2\n', 'b.txt': 'bee\n', 'dir/c.txt': 'sea\n' }, 'files back, the new branch file gone');

  // And to the new branch again: its files, kept when it was left.
  const again = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  t.equal(again.length, 3);
  const other = (await (await app.api(`/api/sessions/${sid}/checkout`, { method: 'POST', json: { checkpoint_id: cps[0].checkpoint_id } })).json()) as any;
  t.equal(other.checkpoint_id, cps[0].checkpoint_id, 'checkout of a checkpoint shared by both branches');
  const all = await app.service.db.em().getConnection().execute(`select id from checkpoints where session_id = ? and label = 'other path'`, [sid]);
  const back = await (await app.api(`/api/sessions/${sid}/switch-branch`, { method: 'POST', json: { checkpoint_id: all[0].id } })).json();
  t.equal(back.branch_id, rw.branch_id);
  t.same(await userTexts(app, sid), ['one', 'other path']);
  t.same(await files(app, sid), { 'a.txt': 'v1\n', 'after.txt': 'new branch file' }, 'the new branch file is back');
  sock.disconnect();
});

t.test('bad input: unknown, foreign and other-session checkpoints 404, bad position 422, rewind during a run 409', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = script;
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'hello' })).ok, true);
  await untilEnd(seen, sid);
  const [cp] = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  const other = await createSession(app);
  const bob = await app.newUser('bob');
  const post = (path: string, json: unknown, key?: string) => app.api(`/api/sessions/${path}`, { method: 'POST', json, key });
  for (const op of ['rewind', 'switch-branch', 'checkout']) {
    t.equal((await post(`${sid}/${op}`, { checkpoint_id: 'cp_doesnotexist' })).status, 404, `${op}: unknown checkpoint`);
    t.equal((await post(`${other}/${op}`, { checkpoint_id: cp.checkpoint_id })).status, 404, `${op}: a checkpoint of another session`);
    t.equal((await post(`${sid}/${op}`, { checkpoint_id: cp.checkpoint_id }, bob.key)).status, 404, `${op}: another user's session`);
    t.equal((await post(`${sid}/${op}`, {})).status, 422, `${op}: no checkpoint_id`);
  }
  t.equal((await post(`${sid}/checkout`, { checkpoint_id: cp.checkpoint_id, position: 'middle' })).status, 422, 'position outside its values');
  t.equal((await app.api(`/api/sessions/${sid}/checkpoints`, { key: bob.key })).status, 404);

  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'slow' })).ok, true);
  const busy = await post(`${sid}/rewind`, { checkpoint_id: cp.checkpoint_id });
  t.equal(busy.status, 409);
  t.equal((await busy.json()).code, 'SESSION_BUSY');
  t.equal((await post(`${sid}/switch-branch`, { checkpoint_id: cp.checkpoint_id })).status, 409);
  await untilEnd(seen, sid, 20_000, 2);
  t.same(await userTexts(app, sid), ['hello', 'slow'], 'nothing changed');
});

t.test('a file over the snapshot limit is listed as skipped, heavy folders are left out, the checkpoint still records the turn', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t, { AGENTSVC_SNAPSHOT_FILE_LIMIT: '1000' });
  model.fallback = script;
  const me = (await (await app.api('/api/auth/me')).json()).id;
  await app.api(`/api/sessions/${sid}/files/small.txt`, { method: 'PUT', json: { content: 'small' } });
  await app.api(`/api/sessions/${sid}/files/big.bin`, { method: 'PUT', json: { content: 'x'.repeat(5000) } });
  await app.api(`/api/sessions/${sid}/files/node_modules/pkg/index.js`, { method: 'PUT', json: { content: 'module' } });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'snap' })).ok, true);
  await untilEnd(seen, sid);
  const [cp] = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  t.equal(cp.files, 1, 'small.txt only');
  t.same(cp.skipped, [{ path: 'big.bin', size: 5000, reason: 'over the snapshot file limit of 1000 bytes' }]);
  const view = await (await app.api(`/api/sessions/${sid}/checkout`, { method: 'POST', json: { checkpoint_id: cp.checkpoint_id } })).json();
  t.same(view.files, [{ path: 'small.txt', size: 5 }]);
  const gitDir = join(app.config.workspaces, '.snapshots', me, `${sid}.git`);
  t.ok(existsSync(gitDir), 'the snapshot store exists, outside the session folder');
  t.equal((await app.api(`/api/sessions/${sid}`, { method: 'DELETE' })).status, 200);
  t.notOk(existsSync(gitDir), 'and goes with the session');
});

t.test('the checkpoint is taken beside the first model call, but a tool of the run never runs before it is complete', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  // The first answer writes a file at once; the snapshot of 3,000 files takes far longer than that.
  model.fallback = (body: any) => (body.messages.at(-1).role === 'tool' ? { text: ['done'] } : { toolCalls: [{ name: 'Write', args: { file_path: 'late.txt', content: 'written by the run\n' } }] });
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const dir = sessionHostDir(app.home, me, sid);
  mkdirSync(join(dir, 'many'), { recursive: true });
  for (let i = 0; i < 3000; i++) writeFileSync(join(dir, 'many', `f${i}.txt`), `file ${i}\n`);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'write late' })).ok, true);
  await untilEnd(seen, sid, 60_000);
  t.same(await (await app.api(`/api/sessions/${sid}/files/late.txt`)).text(), 'written by the run\n', 'the tool ran');
  const [cp] = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  t.equal(cp.files, 3000, 'the checkpoint holds the files before the run, without the one its tool wrote');
  const view = await (await app.api(`/api/sessions/${sid}/checkout`, { method: 'POST', json: { checkpoint_id: cp.checkpoint_id } })).json();
  t.notOk(view.files.some((f: any) => f.path === 'late.txt'), 'late.txt is not in it');
});

/** Both runners: the docker runner's workspaces are bind mounts of the same host folders. */
const dockerOk = await new Dockerode()
  .ping()
  .then(() => true)
  .catch(() => false);
const noDocker = needs(t, 'the docker variant of the rewind test', dockerOk ? false : 'docker daemon unreachable (run .ci/docker.sh start)');
t.test('on the docker runner: files written by Bash in a container are checkpointed and restored', { skip: noDocker }, async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t, { AGENTSVC_RUNNER: 'docker', AGENTSVC_RUNNER_IMAGE: process.env.AGENTSVC_TEST_IMAGE ?? 'agentsvc-test:latest' });
  model.fallback = (body: any) => {
    if (body.messages.at(-1).role === 'tool') return { text: ['ok'] };
    const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
    return { toolCalls: [{ name: 'Bash', args: { command: `echo ${user} >> log.txt && mkdir -p d && echo ${user} > d/${user}.txt` } }] };
  };
  for (const [i, message] of ['first', 'second', 'third'].entries()) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true);
    await untilEnd(seen, sid, 60_000, i + 1);
  }
  const tool = seen.find((e) => e.payload.patch_type === 'tool_result');
  t.match(tool?.payload.data, { status: 'done' }, 'Bash ran in the container');
  const read = async (p: string) => {
    const r = await app.api(`/api/sessions/${sid}/files/${p}`);
    return r.status === 200 ? r.text() : null;
  };
  t.equal(await read('log.txt'), 'first\nsecond\nthird\n');
  const cps = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  const rw = await (await app.api(`/api/sessions/${sid}/rewind`, { method: 'POST', json: { checkpoint_id: cps[1].checkpoint_id } })).json();
  t.match(rw, { restored_files: 2, message: 'second' });
  t.equal(await read('log.txt'), 'first\n', 'the log as before the second chat');
  t.equal(await read('d/second.txt'), null);
  t.equal(await read('d/first.txt'), 'first\n');
  // The container sees the restored files and can still write them.
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'again' })).ok, true);
  await untilEnd(seen, sid, 60_000, 4);
  t.equal(await read('log.txt'), 'first\nagain\n', 'the sandbox appends to the restored file');
});
