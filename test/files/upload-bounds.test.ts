import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { filesFixture, uploadForm } from '../helpers/files.js';

t.test('upload requests are bounded in file count and total bytes; over either, 413 and nothing stored', async (t) => {
  const { app, dir, base } = await filesFixture(t, { AGENTSVC_UPLOAD_MAX_FILES: '3', AGENTSVC_UPLOAD_MAX_TOTAL: '10000', AGENTSVC_UPLOAD_LIMIT: '8192' });
  const four = uploadForm([
    ['1', 'a.txt'],
    ['2', 'b.txt'],
    ['3', 'c.txt'],
    ['4', 'd.txt'],
  ]);
  let r = await app.api(`${base}/upload/many`, { method: 'POST', body: four });
  t.equal(r.status, 413, 'four files over a bound of three');
  const body = await r.json();
  t.equal(body.code, 'PAYLOAD_TOO_LARGE');
  t.match(body.detail, /more than 3 files/);
  t.notOk(existsSync(join(dir, 'many')), 'nothing stored');

  const big = 'x'.repeat(4000);
  r = await app.api(`${base}/upload/total`, { method: 'POST', body: uploadForm([[big, 'a.txt'], [big, 'b.txt'], [big, 'c.txt']]) });
  t.equal(r.status, 413, '12000 bytes over a total of 10000');
  t.match((await r.json()).detail, /upload total of 10000 bytes/);
  t.notOk(existsSync(join(dir, 'total')), 'nothing stored');

  r = await app.api(`${base}/upload/ok`, { method: 'POST', body: uploadForm([[big, 'a.txt'], [big, 'b.txt'], ['1', 'c.txt']]) });
  t.equal(r.status, 200, 'at the bounds it is accepted');
  t.same((await r.json()).uploaded, ['ok/a.txt', 'ok/b.txt', 'ok/c.txt']);
  t.same(readdirSync(join(app.home, 'tmp', 'uploads')), [], 'no temp files left');
});

t.test('a multipart body without a boundary is 400 INVALID_MULTIPART, not a 500', async (t) => {
  const { app, id } = await filesFixture(t);
  for (const dir of ['', 'sub', 'fuzz.txt']) {
    const r = await app.api(`/api/sessions/${id}/upload/${dir}`, { method: 'POST', body: '{}', headers: { 'content-type': 'multipart/form-data' } });
    t.equal(r.status, 400, `upload/${dir}`);
    t.match(await r.json(), { code: 'INVALID_MULTIPART', detail: /Boundary not found/ });
  }
});
