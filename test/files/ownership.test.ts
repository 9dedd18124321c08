/**
 * Entries the file endpoints make (PUT, upload, copy) belong to the computer's user with normal
 * modes, so the agent can read an uploaded file and write into an uploaded folder. Before, a root
 * service made them host root's (`nobody` in the sandbox) and uploads were 0600: a Bash call could
 * neither read them nor write into the folders.
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { SANDBOX_USER } from '../../runners/local/sandbox.js';
import { sessionHostDir } from '../../src/core/files/paths.js';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { enc, uploadForm } from '../helpers/files.js';
import { chat } from '../plugins/helpers.js';
import { rootSandboxSkip } from '../helpers/root-sandbox.js';

const skip = rootSandboxSkip('REST ownership (a non-root service makes entries its own uid, the sandbox\'s)');

t.test('PUT, upload and copy make entries the sandbox user can read and write into', { skip }, async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const base = `/api/sessions/${sid}`;
  const put = (path: string, content: string) => app.api(`${base}/files/${enc(path)}`, { method: 'PUT', json: { content } });
  t.equal((await put('put.txt', 'put file\n')).status, 200);
  t.equal((await put('putdir/inner.txt', 'put inner\n')).status, 200);
  const up = await app.api(`${base}/upload/`, { method: 'POST', body: uploadForm([['up file\n', 'up.txt'], ['up inner\n', 'x']], ['up.txt', 'updir/inner.txt']) });
  t.equal(up.status, 200);
  t.same((await up.json()).uploaded, ['up.txt', 'updir/inner.txt']);
  const copy = await app.api(`${base}/files/updir/copy`, { method: 'POST', json: {} });
  t.equal(copy.status, 200);
  t.same(await copy.json(), { path: 'updir copy' });

  const sandbox = Number(execFileSync('id', ['-u', SANDBOX_USER], { encoding: 'utf8' }).trim());
  const userId = (await (await app.api('/api/auth/me')).json()).id;
  const dir = sessionHostDir(app.home, userId, sid);
  for (const p of ['put.txt', 'putdir', 'putdir/inner.txt', 'up.txt', 'updir', 'updir/inner.txt', 'updir copy', 'updir copy/inner.txt']) {
    const st = statSync(join(dir, p));
    t.equal(st.uid, sandbox, `${p} is ${SANDBOX_USER}'s (uid ${sandbox}), not host root's`);
    if (st.isFile()) t.equal(st.mode & 0o077, 0o044, `${p} is readable like a file the computer makes (mode ${(st.mode & 0o777).toString(8)})`);
  }
  t.equal(statSync(join(dir, 'up.txt')).mode & 0o777, 0o644, 'an uploaded file is 0644, not 0600');

  const command = 'cat put.txt up.txt putdir/inner.txt updir/inner.txt && touch putdir/new updir/new "updir copy/new" && echo wrote';
  const { results } = await chat(app, model, sid, 'use them', { toolCalls: [{ name: 'Bash', args: { command } }] }, { text: ['Done.'] });
  t.equal(results[0].status, 'done', results[0].result);
  t.match(results[0].result, /put file\nup file\nput inner\nup inner\nwrote/, 'Bash read every file and wrote into every folder');
  for (const p of ['putdir/new', 'updir/new', 'updir copy/new']) t.equal(statSync(join(dir, p)).uid, sandbox, `${p} made by the sandbox`);
});
