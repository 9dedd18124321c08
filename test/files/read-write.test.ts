import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { enc, filesFixture, uploadForm } from '../helpers/files.js';

t.test('workspace files: list, read, write, delete, upload', async (t) => {
  const { app, dir, base, put } = await filesFixture(t, { AGENTSVC_FILE_LIMIT: '4096', AGENTSVC_UPLOAD_LIMIT: '8192' });

  t.test('the root lists empty before anything is written, with or without the slash', async (t) => {
    for (const p of [`${base}/ls/`, `${base}/ls`]) {
      const r = await app.api(p);
      t.equal(r.status, 200, p);
      t.same(await r.json(), []);
    }
    t.ok(existsSync(dir), 'the session folder is made on first use');
  });

  t.test('PUT writes, creating parent folders; GET reads it back', async (t) => {
    const r = await put('notes/deep/hello.txt', 'héllo\nwörld');
    t.equal(r.status, 200);
    t.same(await r.json(), { success: true });
    t.equal(readFileSync(join(dir, 'notes/deep/hello.txt'), 'utf8'), 'héllo\nwörld');
    const g = await app.api(`${base}/files/notes/deep/hello.txt`);
    t.equal(g.status, 200);
    t.equal(g.headers.get('content-type'), 'text/plain; charset=utf-8');
    t.equal(g.headers.get('content-length'), String(Buffer.byteLength('héllo\nwörld')));
    t.equal(await g.text(), 'héllo\nwörld');
    t.equal((await put('notes/deep/hello.txt', 'replaced')).status, 200, 'overwrites');
    t.equal(await (await app.api(`${base}/files/notes/deep/hello.txt`)).text(), 'replaced');
    t.equal((await put('empty.txt', '')).status, 200, 'empty content is a file too');
    t.equal((await app.api(`${base}/files/empty.txt`)).headers.get('content-length'), '0');
  });

  t.test('content types follow the extension', async (t) => {
    const cases: [string, string][] = [
      ['a.txt', 'text/plain; charset=utf-8'],
      ['a.md', 'text/plain; charset=utf-8'],
      ['a.py', 'text/plain; charset=utf-8'],
      ['Makefile', 'text/plain; charset=utf-8'],
      ['a.json', 'application/json'],
      ['a.html', 'text/html; charset=utf-8'],
      ['a.csv', 'text/csv; charset=utf-8'],
      ['a.svg', 'image/svg+xml'],
      ['a.pdf', 'application/pdf'],
      ['A.PNG', 'image/png'],
      ['a.unknownext', 'application/octet-stream'],
      ['noext', 'application/octet-stream'],
    ];
    for (const [name, type] of cases) {
      t.equal((await put(`types/${name}`, 'x')).status, 200);
      const r = await app.api(`${base}/files/types/${name}`);
      t.equal(r.headers.get('content-type'), type, name);
      t.equal(r.headers.get('x-content-type-options'), 'nosniff');
    }
  });

  t.test('names with spaces and unicode work in every direction', async (t) => {
    const name = 'dossier été/ünï cødé 文件 #1?.txt';
    t.equal((await put(name, 'ok')).status, 200);
    t.equal(readFileSync(join(dir, name), 'utf8'), 'ok');
    t.equal(await (await app.api(`${base}/files/${enc(name)}`)).text(), 'ok');
    t.same(await (await app.api(`${base}/ls/${enc('dossier été')}`)).json(), [{ name: 'ünï cødé 文件 #1?.txt', type: 'file', size: 2 }]);
  });

  t.test('ls: folders first, then by name; hidden files included; sizes for files only', async (t) => {
    mkdirSync(join(dir, 'sorted/zdir'), { recursive: true });
    mkdirSync(join(dir, 'sorted/Adir'), { recursive: true });
    writeFileSync(join(dir, 'sorted/b.txt'), '12345');
    writeFileSync(join(dir, 'sorted/.hidden'), '');
    writeFileSync(join(dir, 'sorted/a.txt'), 'x');
    const r = await app.api(`${base}/ls/sorted`);
    t.equal(r.status, 200);
    t.same(await r.json(), [
      { name: 'Adir', type: 'directory' },
      { name: 'zdir', type: 'directory' },
      { name: '.hidden', type: 'file', size: 0 },
      { name: 'a.txt', type: 'file', size: 1 },
      { name: 'b.txt', type: 'file', size: 5 },
    ]);
    const root = await (await app.api(`${base}/ls/`)).json();
    t.ok(root.some((e: { name: string }) => e.name === 'sorted'));
    t.equal((await app.api(`${base}/ls/sorted/zdir/`)).status, 200, 'trailing slash');
    t.equal((await app.api(`${base}/ls/./sorted/../sorted`)).status, 200, 'dot segments that stay inside');
    t.equal((await app.api(`${base}/ls/${enc(join(dir, 'sorted'))}`)).status, 200, 'an absolute path inside the workspace');
  });

  t.test('errors: missing is 404, wrong kind is 422', async (t) => {
    const missing = await app.api(`${base}/ls/nope`);
    t.equal(missing.status, 404);
    t.equal((await missing.json()).code, 'NOT_FOUND');
    t.equal((await app.api(`${base}/ls/sorted/a.txt`)).status, 422, 'ls of a file');
    t.equal((await app.api(`${base}/files/nope.txt`)).status, 404);
    t.equal((await app.api(`${base}/files/sorted`)).status, 422, 'GET of a folder');
    t.equal((await app.api(`${base}/files/`)).status, 422, 'GET of the root');
    t.equal((await put('sorted', 'x')).status, 422, 'PUT over a folder');
    t.equal((await put('sorted/a.txt/under', 'x')).status, 422, 'PUT under a file');
    t.equal((await app.api(`${base}/files/x.txt`, { method: 'PUT', json: { content: 1 } })).status, 422, 'content must be a string');
    t.equal((await app.api(`${base}/files/x.txt`, { method: 'PUT', json: {} })).status, 422, 'content is required');
    t.notOk(existsSync(join(dir, 'x.txt')));
  });

  t.test('a FIFO in the workspace is refused, never waited on', async (t) => {
    t.equal(spawnSync('mkfifo', [join(dir, 'pipe')]).status, 0, 'mkfifo made the FIFO (coreutils)');
    t.equal((await app.api(`${base}/files/pipe`)).status, 422, 'read');
    t.equal((await put('pipe', 'x')).status, 422, 'write');
    t.equal((await app.api(`${base}/files/pipe/copy`, { method: 'POST' })).status, 422, 'copy');
    t.same((await (await app.api(`${base}/ls/`)).json()).find((e: { name: string }) => e.name === 'pipe'), { name: 'pipe', type: 'file', size: 0 });
    const zip = await app.api(`${base}/download-dir/`);
    t.equal(zip.status, 200, 'zip leaves it out');
    t.notOk(Buffer.from(await zip.arrayBuffer()).includes('pipe'), 'no entry for the FIFO');
    t.same(await (await app.api(`${base}/files/pipe`, { method: 'DELETE' })).json(), { deleted: true });
  });

  t.test('PUT over the file limit is 413 and writes nothing', async (t) => {
    t.equal((await put('limit/at.txt', 'a'.repeat(4096))).status, 200, 'exactly the limit is fine');
    const over = await put('limit/over.txt', 'a'.repeat(4097));
    t.equal(over.status, 413);
    t.equal((await over.json()).code, 'PAYLOAD_TOO_LARGE');
    t.notOk(existsSync(join(dir, 'limit/over.txt')));
    // Multi-byte characters count in bytes: 2048 x 'é' is 4096 bytes, one more is over.
    t.equal((await put('limit/at.txt', 'é'.repeat(2049))).status, 413);
    t.equal(readFileSync(join(dir, 'limit/at.txt'), 'utf8'), 'a'.repeat(4096), 'an overwrite over the limit leaves the old content');
    // A body well past the route's JSON limit is refused before it is parsed.
    t.equal((await put('limit/huge.txt', 'a'.repeat(64 * 1024))).status, 413);
    t.notOk(existsSync(join(dir, 'limit/huge.txt')));
  });

  t.test('DELETE removes files and whole folders; missing is 404; the root is refused', async (t) => {
    const del = (p: string) => app.api(`${base}/files/${enc(p)}`, { method: 'DELETE' });
    let r = await del('sorted/a.txt');
    t.equal(r.status, 200);
    t.same(await r.json(), { deleted: true });
    t.notOk(existsSync(join(dir, 'sorted/a.txt')));
    r = await del('sorted');
    t.same(await r.json(), { deleted: true });
    t.notOk(existsSync(join(dir, 'sorted')));
    t.equal((await del('sorted')).status, 404);
    for (const root of ['', '.', 'notes/..']) {
      const res = await app.api(`${base}/files/${root}`, { method: 'DELETE' });
      t.equal(res.status, 422, `root as "${root}"`);
    }
    t.ok(existsSync(join(dir, 'notes/deep/hello.txt')), 'nothing else went');
  });

  t.test('upload: binary round trip with bytes 0-255', async (t) => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    const fd = uploadForm([[bytes, 'all bytes.bin'], [Buffer.from('PNGDATA'), 'pic.png']]);
    const r = await app.api(`${base}/upload/up`, { method: 'POST', body: fd });
    t.equal(r.status, 200);
    t.same(await r.json(), { uploaded: ['up/all bytes.bin', 'up/pic.png'], failed: [] });
    const g = await app.api(`${base}/files/${enc('up/all bytes.bin')}`);
    t.equal(g.headers.get('content-type'), 'application/octet-stream');
    t.same(new Uint8Array(await g.arrayBuffer()), bytes, 'identical bytes back');
    t.equal((await app.api(`${base}/files/up/pic.png`)).headers.get('content-type'), 'image/png');
  });

  t.test('upload: `paths` places each file; unicode names; the root as target', async (t) => {
    const fd = uploadForm([['one', 'one.txt'], ['two', 'ignored name.txt']], ['tree/a/one.txt', 'tree/b/été 2.txt']);
    let r = await app.api(`${base}/upload/`, { method: 'POST', body: fd });
    t.equal(r.status, 200);
    t.same(await r.json(), { uploaded: ['tree/a/one.txt', 'tree/b/été 2.txt'], failed: [] });
    t.equal(readFileSync(join(dir, 'tree/b/été 2.txt'), 'utf8'), 'two');

    const named = uploadForm([['ü', 'fïlé ñame.txt']]);
    r = await app.api(`${base}/upload/${enc('dossier été')}`, { method: 'POST', body: named });
    t.same(await r.json(), { uploaded: ['dossier été/fïlé ñame.txt'], failed: [] });
    t.equal(readFileSync(join(dir, 'dossier été/fïlé ñame.txt'), 'utf8'), 'ü');
  });

  t.test('upload: a file that cannot be placed is listed in failed; the others land', async (t) => {
    const fd = uploadForm([['ok', 'ok.txt'], ['no', 'x']], ['mixed/ok.txt', 'tree']);
    const r = await app.api(`${base}/upload/`, { method: 'POST', body: fd });
    t.equal(r.status, 200);
    const body = await r.json();
    t.same(body.uploaded, ['mixed/ok.txt']);
    t.equal(body.failed.length, 1);
    t.equal(body.failed[0].name, 'tree');
    t.type(body.failed[0].error, 'string');
  });

  t.test('upload: bad input is 422 and stores nothing', async (t) => {
    const fd = uploadForm([['a', 'a.txt']], ['p/a.txt', 'p/b.txt']);
    let r = await app.api(`${base}/upload/bad`, { method: 'POST', body: fd });
    t.equal(r.status, 422, 'paths of the wrong length');
    const notJson = uploadForm([['a', 'a.txt']], '{nope');
    r = await app.api(`${base}/upload/bad`, { method: 'POST', body: notJson });
    t.equal(r.status, 422, 'paths not JSON');
    r = await app.api(`${base}/upload/bad`, { method: 'POST', body: new FormData() });
    t.equal(r.status, 422, 'no files');
    r = await app.api(`${base}/upload/bad`, { method: 'POST', json: { files: ['a'] } });
    t.equal(r.status, 415, 'not multipart');
    t.notOk(existsSync(join(dir, 'bad')));
  });

  t.test('upload over the per-file limit is 413 and nothing is stored, not even the files within it', async (t) => {
    const fd = uploadForm([['small', 'small.txt'], [new Uint8Array(8193), 'big.bin'], ['after', 'after.txt']]);
    const r = await app.api(`${base}/upload/big`, { method: 'POST', body: fd });
    t.equal(r.status, 413);
    t.equal((await r.json()).code, 'PAYLOAD_TOO_LARGE');
    t.notOk(existsSync(join(dir, 'big')), 'no partial file, no other file');
    const ok = uploadForm([[new Uint8Array(8192), 'exact.bin']]);
    t.same(await (await app.api(`${base}/upload/big`, { method: 'POST', body: ok })).json(), { uploaded: ['big/exact.bin'], failed: [] });
  });

  t.test('uploads leave no temp files behind', async (t) => {
    t.same(readdirSync(join(app.home, 'tmp', 'uploads')), []);
  });
});
