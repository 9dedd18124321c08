import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { uploadForm } from '../helpers/files.js';
import { request } from '../helpers/socket.js';

/**
 * AGENTSVC_USER_QUOTA_BYTES (docs/operations.md), enforced in the file layer: a write, an upload, an
 * import and a tool's write past the quota fail (413 QUOTA_EXCEEDED, or a tool error in a run)
 * and leave nothing partial; GET /api/auth/me shows storage; each user has their own count.
 */
t.setTimeout(180_000);

t.test('writes, uploads, imports and tools stop at the quota', async (t) => {
  const toolResults: string[] = [];
  const { app, model } = await buildWithModel(t, { AGENTSVC_USER_QUOTA_BYTES: '1000' });
  model.fallback = (body: any) => {
    const last = body.messages.at(-1);
    if (last.role === 'tool') {
      toolResults.push(String(last.content));
      return { text: ['ok'] };
    }
    return { toolCalls: [{ name: 'Write', args: { file_path: 'tool.txt', content: 'x'.repeat(300) } }] };
  };
  const sid = await createSession(app);
  const base = `/api/sessions/${sid}`;
  const put = (path: string, content: string) => app.api(`${base}/files/${path}`, { method: 'PUT', json: { content } });
  const storage = async (key = app.adminKey) => (await (await app.api('/api/auth/me', { key })).json()).storage;

  t.same(await storage(), { used_bytes: 0, quota_bytes: 1000 }, 'me shows storage');
  t.equal((await put('a.txt', 'a'.repeat(600))).status, 200);
  t.same(await storage(), { used_bytes: 600, quota_bytes: 1000 }, 'the write is counted');

  const over = await put('b.txt', 'b'.repeat(500));
  t.equal(over.status, 413);
  t.match(await over.json(), { code: 'QUOTA_EXCEEDED', detail: /quota of 1000 bytes/ });
  t.equal((await app.api(`${base}/files/b.txt`)).status, 404, 'nothing written');
  const bigger = await put('a.txt', 'A'.repeat(1200));
  t.equal(bigger.status, 413, 'a replacement past the quota is refused');
  t.equal(await (await app.api(`${base}/files/a.txt`)).text(), 'a'.repeat(600), 'and the old content stays');
  t.equal((await put('a.txt', 'c'.repeat(900))).status, 200, 'a replacement counts only what it adds');
  t.equal((await storage()).used_bytes, 900);

  const up = await app.api(`${base}/upload/`, { method: 'POST', body: uploadForm([['1'.repeat(50), 'one.txt'], ['2'.repeat(100), 'two.txt']]) });
  t.equal(up.status, 413, 'an upload past the quota');
  t.equal((await up.json()).code, 'QUOTA_EXCEEDED');
  t.equal((await app.api(`${base}/files/one.txt`)).status, 404, 'no file of the upload stored');

  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'write' })).ok, true);
  await untilEnd(seen, sid, 30_000);
  t.match(toolResults.at(-1), /quota of 1000 bytes/, 'the model reads a tool error it can act on');
  t.equal((await app.api(`${base}/files/tool.txt`)).status, 404, 'the tool wrote nothing');

  // An archive of 900 bytes of files imported on top of 900 used.
  const zip = Buffer.from(await (await app.api(`${base}/export`)).arrayBuffer());
  const before = (await (await app.api('/api/sessions')).json()).total;
  const form = new FormData();
  form.set('file', new Blob([new Uint8Array(zip)]), 'session.zip');
  const imp = await app.api('/api/sessions/import', { method: 'POST', body: form });
  t.equal(imp.status, 413, 'an import past the quota');
  t.equal((await imp.json()).code, 'QUOTA_EXCEEDED');
  t.equal((await (await app.api('/api/sessions')).json()).total, before, 'no session left by the import');

  const bob = await app.newUser();
  t.same(await storage(bob.key), { used_bytes: 0, quota_bytes: 1000 }, "another user's count is their own");
  const bobSid = await createSession(app, bob.key);
  t.equal((await app.api(`/api/sessions/${bobSid}/files/x.txt`, { method: 'PUT', json: { content: 'x'.repeat(800) }, key: bob.key })).status, 200);
});

t.test('a Bash command that writes past the quota fails as a tool error and leaves nothing it added', async (t) => {
  const results: { content: string }[] = [];
  const { app, model } = await buildWithModel(t, { AGENTSVC_USER_QUOTA_BYTES: String(256 * 1024) });
  const commands = [
    // 512 KiB in a new file (the outside finding), a new folder with a file, and a file that grows.
    'head -c 524288 /dev/zero > big.bin; mkdir -p made/deeper && echo hi > made/deeper/x.txt; head -c 100000 /dev/zero >> kept.txt; echo wrote',
    'head -c 1000 /dev/zero > small.bin; echo fits',
  ];
  let step = 0;
  model.fallback = (body: any) => {
    const last = body.messages.at(-1);
    if (last.role === 'tool') {
      results.push({ content: String(last.content) });
      return { text: ['ok'] };
    }
    return { toolCalls: [{ name: 'Bash', args: { command: commands[step++] } }] };
  };
  const sid = await createSession(app);
  const base = `/api/sessions/${sid}`;
  t.equal((await app.api(`${base}/files/kept.txt`, { method: 'PUT', json: { content: 'k'.repeat(1000) } })).status, 200);
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'write a lot' })).ok, true);
  await untilEnd(seen, sid, 60_000);
  const result = seen.find((e: any) => e.name === 'turn:patch' && e.payload.patch_type === 'tool_result')?.payload.data;
  t.equal(result?.status, 'error', 'the call is a tool error');
  t.match(results[0]?.content, /^Error: QUOTA_EXCEEDED: the command wrote past the storage quota of 262144 bytes/, 'the model reads why');
  t.match(results[0]?.content, /new entries removed: 2; files cut back to their earlier size: 1\)/);
  t.equal((await app.api(`${base}/files/big.bin`)).status, 404, 'the new file is gone');
  t.equal((await app.api(`${base}/files/made`)).status, 404, 'the new folder is gone');
  t.equal(await (await app.api(`${base}/files/kept.txt`)).text(), 'k'.repeat(1000), 'the grown file is back to what it held');
  t.same((await (await app.api('/api/auth/me')).json()).storage, { used_bytes: 1000, quota_bytes: 262144 }, 'the count is what is left');

  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'write a little' })).ok, true);
  await waitForEnds(seen, sid, 2);
  t.match(results[1]?.content, /fits/, 'a command within the quota runs as always');
  t.equal((await app.api(`${base}/files/small.bin`)).status, 200);
});

/** Until the session has ended `n` runs. */
async function waitForEnds(seen: any[], sid: string, n: number) {
  const { waitFor } = await import('../helpers/wait.js');
  await waitFor(() => seen.filter((e) => e.name === 'chat:end' && e.payload.session_id === sid).length >= n, { timeoutMs: 60_000, what: `${n} runs ended` });
}

t.test('without a quota nothing is refused and me says 0', async (t) => {
  const { app } = await buildWithModel(t);
  const sid = await createSession(app);
  t.equal((await app.api(`/api/sessions/${sid}/files/big.txt`, { method: 'PUT', json: { content: 'z'.repeat(5000) } })).status, 200);
  t.same((await (await app.api('/api/auth/me')).json()).storage, { used_bytes: 5000, quota_bytes: 0 });
});
