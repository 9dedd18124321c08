import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import type { TestApp } from '../helpers/app.js';
import { rawZip, zipEntries } from './rawzip.js';

/** Export and import (docs/sharing-and-portability.md): a round trip, and hostile archives refused with nothing left behind. */

function script(body: any) {
  if (body.messages.at(-1).role === 'tool') return { text: ['done'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'one') return { toolCalls: [{ name: 'Write', args: { file_path: 'src/app.py', content: 'print("v1")\n' } }] };
  if (user === 'two') return { toolCalls: [{ name: 'TaskCreate', args: { subject: 'ship it', description: 'after review' } }, { name: 'Write', args: { file_path: 'notes.md', content: '# notes\n' } }] };
  return { text: [`echo ${user}`] };
}


const upload = (app: TestApp, path: string, zip: Buffer, fields: Record<string, string> = {}) => {
  const form = new FormData();
  form.set('file', new Blob([new Uint8Array(zip)]), 'session.zip');
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  return app.api(path, { method: 'POST', body: form });
};

/** What must survive a round trip: roles, texts, tool calls (names, arguments, results), branches. */
const essence = (turnsJsonl: string) =>
  turnsJsonl
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .map((x) => [x.sequence, x.role, x.loop_id, x.status, x.blocks.map((b: any) => `${b.type}:${b.content}`), x.tool_calls.map((c: any) => [c.tool_name, c.arguments, c.result]), x.branch_id === 'main' ? 'main' : 'other']);

t.test('export, import, export again: the same turns, texts and files, with new ids', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = script;
  let ends = 0;
  for (const message of ['one', 'two', 'three']) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true);
    await untilEnd(seen, sid, 20_000, ++ends);
  }
  const cps = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  await app.api(`/api/sessions/${sid}/rewind`, { method: 'POST', json: { checkpoint_id: cps[2].checkpoint_id } });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'four' })).ok, true);
  await untilEnd(seen, sid, 20_000, ++ends);

  const res = await app.api(`/api/sessions/${sid}/export`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/zip');
  const zip = Buffer.from(await res.arrayBuffer());
  const first = await zipEntries(zip);
  const manifest = JSON.parse(first.get('manifest.json')!);
  t.match(manifest, { format: 'agentsvc-session', version: 1, session: { mode: 'executing' }, counts: { tasks: 1, checkpoints: 4, branches: 2 } });
  t.ok(first.has('files/src/app.py') && first.has('files/notes.md'), 'workspace files under files/');
  t.equal(first.get('turns.jsonl')!.trim().split('\n').length, manifest.counts.turns, 'every branch of turns');

  const preview = await (await upload(app, '/api/sessions/preview-import', zip)).json();
  t.match(preview, { format: 'agentsvc-session', version: 1, turns: manifest.counts.turns, files: 2, warnings: [] });
  t.ok(preview.total_bytes > 0);
  const before = (await (await app.api('/api/sessions')).json()).total;
  t.equal(before, 1, 'preview created nothing');

  const imp = await upload(app, '/api/sessions/import', zip, { name: 'Imported copy' });
  t.equal(imp.status, 200);
  const made = await imp.json();
  t.match(made, { session_id: /^sess_/, intent: 'Imported copy', status: 'completed' });
  t.not(made.session_id, sid);
  const msgs = async (s: string) => ((await (await app.api(`/api/sessions/${s}/messages`)).json()) as any[]).map((m) => [m.role, m.blocks.map((b: any) => b.content).join('|')]);
  t.same(await msgs(made.session_id), await msgs(sid), 'the same active branch');
  t.equal(await (await app.api(`/api/sessions/${made.session_id}/files/src/app.py`)).text(), 'print("v1")\n');
  t.equal((await (await app.api(`/api/sessions/${made.session_id}/checkpoints`)).json()).length, (await (await app.api(`/api/sessions/${sid}/checkpoints`)).json()).length);
  t.match(await (await app.api(`/api/sessions/${made.session_id}/tasks`)).json(), [{ subject: 'ship it' }]);

  const again = await zipEntries(Buffer.from(await (await app.api(`/api/sessions/${made.session_id}/export`)).arrayBuffer()));
  t.same(essence(again.get('turns.jsonl')!), essence(first.get('turns.jsonl')!), 'export -> import -> export: the same turns and texts');
  t.same([...again.keys()].filter((k) => k.startsWith('files/')).sort(), [...first.keys()].filter((k) => k.startsWith('files/')).sort());
  for (const k of [...first.keys()].filter((k) => k.startsWith('files/'))) t.equal(again.get(k), first.get(k), k);
  const oldIds = new Set(first.get('turns.jsonl')!.match(/(entry|turn|tc)_[A-Za-z0-9]{20}/g));
  const reused = again.get('turns.jsonl')!.match(/(entry|turn|tc)_[A-Za-z0-9]{20}/g)!.filter((id) => oldIds.has(id));
  t.same(reused, [], 'new ids for everything');

  const bob = await app.newUser('bob');
  t.equal((await app.api(`/api/sessions/${sid}/export`, { key: bob.key })).status, 404, "another user's session");
  sock.disconnect();
});

/** `n` turns.jsonl lines, each passed through `edit` (its index as the second argument). */
function manyTurns(n: number, edit: (t: Record<string, unknown>, i: number) => Record<string, unknown>): string {
  const line = (i: number) => JSON.stringify(edit({ id: `entry_${i}`, turn_id: `turn_${i}`, sequence: i + 1, role: i % 2 ? 'assistant' : 'user', status: 'completed', blocks: [{ type: 'text', content: `turn ${i}` }] }, i));
  return `${Array.from({ length: n }, (_, i) => line(i)).join('\n')}\n`;
}

t.test('hostile archives: 422 INVALID_ARCHIVE, nothing created, nothing left in the temp folder', async (t) => {
  const { app } = await chatFixture(t, { AGENTSVC_IMPORT_MAX_ENTRIES: '50' });
  const manifest = JSON.stringify({ format: 'agentsvc-session', version: 1, session: { intent: 'x' }, counts: {} });
  const ok = (extra: { name: string; data: Buffer | string; mode?: number; deflate?: boolean }[]) => rawZip([{ name: 'manifest.json', data: manifest }, ...extra]);
  const cases: [string, Buffer][] = [
    ['not a zip', Buffer.from('hello, I am not an archive')],
    ['zip bomb', ok([{ name: 'files/zeros.bin', data: Buffer.alloc(50 * 1024 * 1024), deflate: true }])],
    ['zip slip', ok([{ name: 'files/../../../evil.txt', data: 'pwned' }])],
    ['absolute name', ok([{ name: '/etc/evil', data: 'pwned' }])],
    ['symlink entry', ok([{ name: 'files/link', data: '/etc/passwd', mode: 0o120777 }])],
    ['device entry', ok([{ name: 'files/dev', data: '', mode: 0o020644 }])],
    ['no manifest', rawZip([{ name: 'turns.jsonl', data: '' }])],
    ['version 99', rawZip([{ name: 'manifest.json', data: JSON.stringify({ format: 'agentsvc-session', version: 99 }) }])],
    ['another format', rawZip([{ name: 'manifest.json', data: JSON.stringify({ format: 'something-else', version: 1 }) }])],
    ['manifest not JSON', rawZip([{ name: 'manifest.json', data: '{nope' }])],
    ['too many entries', ok(Array.from({ length: 60 }, (_, i) => ({ name: `files/f${i}.txt`, data: 'x' })))],
    ['unexpected entry', ok([{ name: 'evil.sh', data: 'rm -rf /' }])],
  ];
  const good = ok([{ name: 'files/a.txt', data: 'hello' }]);
  cases.push(['truncated', good.subarray(0, good.length - 30)]);
  const tmp = join(app.config.workspaces, '.import-tmp');
  for (const [what, zip] of cases) {
    for (const path of ['/api/sessions/import', '/api/sessions/preview-import']) {
      const r = await upload(app, path, zip);
      const body = await r.json();
      t.equal(r.status, 422, `${what} (${path.split('/').pop()}): 422`);
      t.equal(body.code, 'INVALID_ARCHIVE', `${what}: ${body.detail}`);
    }
  }
  // JSON parts are read a record at a time at import: a bad record is found there, and refused the same way.
  const huge = JSON.stringify({ id: 'entry_x', sequence: 1, turn_id: 'turn_x', role: 'user', status: 'completed', blocks: [{ type: 'text', content: randomBytes(13 << 20).toString('base64') }] });
  const parts: [string, Buffer][] = [
    ['turns.jsonl not JSON lines', ok([{ name: 'turns.jsonl', data: '{nope\n{"id": "entry_a", "sequence": 1}\n' }])],
    ['a turn that is not an object', ok([{ name: 'turns.jsonl', data: '[1, 2]\n' }])],
    ['a sequence that is not a number', ok([{ name: 'turns.jsonl', data: '{"id": "entry_a", "turn_id": "turn_a", "sequence": "x", "role": "user", "status": "completed"}\n' }])],
    ['turns the database refuses (one turn id twice)', ok([{ name: 'turns.jsonl', data: '{"id": "entry_a", "turn_id": "turn_a", "sequence": 1, "role": "user", "status": "completed"}\n'.repeat(2) }])],
    // Turns are written by batches: a refusal in a later batch leaves none of the earlier ones.
    ['a turn id repeated 90 turns later', ok([{ name: 'turns.jsonl', data: manyTurns(100, (t, i) => (i === 90 ? { ...t, id: 'entry_2' } : t)) }])],
    ['a bad number 90 turns in', ok([{ name: 'turns.jsonl', data: manyTurns(100, (t, i) => (i === 90 ? { ...t, duration_ms: 'soon' } : t)) }])],
    ['tasks.json not an array', ok([{ name: 'tasks.json', data: '{"id": 1}' }])],
    ['tasks.json cut short', ok([{ name: 'tasks.json', data: '[{"id": 1, "subject": "a"}, {"id"' }])],
    ['branches.json nested too deep', ok([{ name: 'branches.json', data: `[${'['.repeat(300)}${']'.repeat(300)}]` }])],
    ['a turn over 16 MiB', ok([{ name: 'turns.jsonl', data: huge, deflate: true }])],
  ];
  for (const [what, zip] of parts) {
    const r = await upload(app, '/api/sessions/import', zip);
    const body = await r.json();
    t.equal(r.status, 422, `${what}: 422`);
    t.equal(body.code, 'INVALID_ARCHIVE', `${what}: ${body.detail}`);
    t.notMatch(body.detail, /insert into|select /i, 'no statement in the answer');
  }
  t.equal((await (await app.api('/api/sessions')).json()).total, 1, 'no session created (only the fixture one)');
  t.same(existsSync(tmp) ? readdirSync(tmp) : [], [], 'nothing left in the temp folder');
  t.notOk(existsSync(join(app.config.workspaces, '..', 'evil.txt')));
  const r = await upload(app, '/api/sessions/import', good);
  t.equal(r.status, 200, 'a well-formed archive still imports');
  t.equal(await (await app.api(`/api/sessions/${(await r.json()).session_id}/files/a.txt`)).text(), 'hello');
  // Turns over several batches, a last one part full: every one stored, in order, with new ids.
  const hundred = manyTurns(100, (t) => t);
  const many = await upload(app, '/api/sessions/import', ok([{ name: 'turns.jsonl', data: hundred }]));
  t.equal(many.status, 200, '100 turns import');
  const back = (await zipEntries(Buffer.from(await (await app.api(`/api/sessions/${(await many.json()).session_id}/export`)).arrayBuffer()))).get('turns.jsonl')!;
  const lines = back.trim().split('\n').map((l) => JSON.parse(l));
  t.same(
    lines.map((x) => [x.sequence, x.blocks[0].content]),
    Array.from({ length: 100 }, (_, i) => [i + 1, `turn ${i}`]),
    'every turn, in order',
  );
  t.notOk(lines.some((x) => /^entry_\d+$/.test(x.id)), 'new entry ids');
  t.equal((await app.api('/api/sessions/import', { method: 'POST', json: {} })).status, 415, 'not multipart');
});
