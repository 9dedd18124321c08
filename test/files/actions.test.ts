import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import yauzl from 'yauzl';
import { enc, filesFixture } from '../helpers/files.js';

/** name -> content ('' and a trailing slash for folders) of every entry of a ZIP. */
function readZip(buf: Buffer): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const out: Record<string, string> = {};
      zip.on('error', reject);
      zip.on('end', () => resolve(out));
      zip.on('entry', (e: yauzl.Entry) => {
        if (e.fileName.endsWith('/')) {
          out[e.fileName] = '';
          return zip.readEntry();
        }
        zip.openReadStream(e, (err2, rs) => {
          if (err2 || !rs) return reject(err2);
          const chunks: Buffer[] = [];
          rs.on('data', (c: Buffer) => chunks.push(c));
          rs.on('end', () => {
            out[e.fileName] = Buffer.concat(chunks).toString('utf8');
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}

t.test('workspace files: rename, copy, download-dir, share-file', async (t) => {
  const { app, dir, base, put } = await filesFixture(t);
  const post = (path: string, json?: unknown) => app.api(`${base}/files/${path}`, { method: 'POST', json });

  t.test('rename: a bare name in the same folder', async (t) => {
    await put('docs/report.md', 'r');
    let r = await post('docs/report.md/rename', { new_name: 'final report.md' });
    t.equal(r.status, 200);
    t.same(await r.json(), { path: 'docs/final report.md' });
    t.notOk(existsSync(join(dir, 'docs/report.md')));
    t.equal(readFileSync(join(dir, 'docs/final report.md'), 'utf8'), 'r');

    r = await post(`${enc('docs/final report.md')}/rename`, { new_name: 'été.md' });
    t.same(await r.json(), { path: 'docs/été.md' }, 'unicode in the path and in the new name');

    mkdirSync(join(dir, 'folder/inner'), { recursive: true });
    r = await post('folder/rename', { new_name: 'renamed folder' });
    t.same(await r.json(), { path: 'renamed folder' }, 'folders too');
    t.ok(existsSync(join(dir, 'renamed folder/inner')));
  });

  t.test('rename: bad names are 422, an existing target is 409, missing is 404', async (t) => {
    await put('docs/other.md', 'o');
    for (const new_name of ['a/b', '..', '.', '', 'x'.repeat(256), '../escape.md']) {
      const r = await post('docs/other.md/rename', { new_name });
      t.equal(r.status, 422, JSON.stringify(new_name).slice(0, 40));
    }
    t.equal((await post('docs/other.md/rename', {})).status, 422, 'new_name is required');
    const conflict = await post('docs/other.md/rename', { new_name: 'été.md' });
    t.equal(conflict.status, 409);
    t.equal(readFileSync(join(dir, 'docs/été.md'), 'utf8'), 'r', 'the existing file is untouched');
    t.equal((await post('docs/missing.md/rename', { new_name: 'x.md' })).status, 404);
    t.equal((await post('rename', { new_name: 'x' })).status, 404, 'no path, no action');
    t.equal((await post('docs/other.md/move', { new_name: 'x' })).status, 404, 'unknown action');
    t.equal((await post('/rename', { new_name: 'x' })).status, 422, 'the root cannot be renamed');
    t.ok(existsSync(join(dir, 'docs/other.md')));
  });

  t.test('copy: "<stem> copy<ext>", then "copy 2", ...; folders recursively', async (t) => {
    await put('c/data.tar.gz', 'z');
    await put('c/.env', 'E');
    const expected = ['c/data.tar copy.gz', 'c/data.tar copy 2.gz', 'c/data.tar copy 3.gz'];
    for (const path of expected) {
      const r = await post('c/data.tar.gz/copy');
      t.equal(r.status, 200);
      t.same(await r.json(), { path });
      t.equal(readFileSync(join(dir, path), 'utf8'), 'z');
    }
    t.same(await (await post('c/.env/copy')).json(), { path: 'c/.env copy' }, 'a dotfile has no extension');
    await put('c/tree/sub/leaf.txt', 'leaf');
    t.same(await (await post('c/tree/copy')).json(), { path: 'c/tree copy' });
    t.same(await (await post('c/tree/copy')).json(), { path: 'c/tree copy 2' });
    t.equal(readFileSync(join(dir, 'c/tree copy/sub/leaf.txt'), 'utf8'), 'leaf');
    t.same(await (await post(`${enc('c/tree copy')}/copy`)).json(), { path: 'c/tree copy copy' });
    t.same(await (await post(`${enc('dossier é')}/copy`)).json(), { detail: 'file not found', code: 'NOT_FOUND' });
    t.equal((await post('/copy')).status, 422, 'the root cannot be copied');
  });

  t.test('download-dir: a ZIP of the folder, named after it', async (t) => {
    await put('proj/src/main.py', 'print(1)');
    await put('proj/README.md', '# hi');
    await put('proj/.hidden', 'h');
    mkdirSync(join(dir, 'proj/empty'), { recursive: true });
    symlinkSync('README.md', join(dir, 'proj/readme-link.md'));
    symlinkSync('src', join(dir, 'proj/src-link'));
    let r = await app.api(`${base}/download-dir/proj`);
    t.equal(r.status, 200);
    t.equal(r.headers.get('content-type'), 'application/zip');
    t.match(r.headers.get('content-disposition'), /^attachment; filename="proj\.zip"/);
    const entries = await readZip(Buffer.from(await r.arrayBuffer()));
    t.same(entries, {
      '.hidden': 'h',
      'README.md': '# hi',
      'empty/': '',
      'readme-link.md': '# hi',
      'src/': '',
      'src/main.py': 'print(1)',
    });

    r = await app.api(`${base}/download-dir/`);
    t.equal(r.status, 200);
    t.match(r.headers.get('content-disposition'), /filename="workspace\.zip"/);
    const all = await readZip(Buffer.from(await r.arrayBuffer()));
    t.equal(all['proj/src/main.py'], 'print(1)');
    t.equal(all['docs/été.md'], 'r', 'unicode entry names');

    r = await app.api(`${base}/download-dir/${enc('renamed folder')}`);
    t.match(r.headers.get('content-disposition'), /filename\*=UTF-8''renamed%20folder\.zip/);
    t.equal((await app.api(`${base}/download-dir/nope`)).status, 404);
    t.equal((await app.api(`${base}/download-dir/proj/README.md`)).status, 422, 'a file is not a folder');
  });

  t.test('share-file: a relative symlink under .share', async (t) => {
    await put('out/chart.png', 'PNG');
    let r = await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'out/chart.png' } });
    t.equal(r.status, 200);
    t.same(await r.json(), { path: '.share/chart.png', target: 'out/chart.png' });
    const link = join(dir, '.share/chart.png');
    t.ok(lstatSync(link).isSymbolicLink());
    t.equal(readlinkSync(link), '../out/chart.png', 'relative');
    t.equal(await (await app.api(`${base}/files/.share/chart.png`)).text(), 'PNG', 'readable through the link');
    t.equal((await app.api(`${base}/files/.share/chart.png`)).headers.get('content-type'), 'image/png');

    r = await app.api(`${base}/share-file`, {
      method: 'POST',
      json: { source_path: join(dir, 'out/chart.png'), link_name: 'mon graphique.png', share_folder: 'reports/2024' },
    });
    t.same(await r.json(), { path: '.share/reports/2024/mon graphique.png', target: 'out/chart.png' }, 'absolute source, named link, nested folder');
    t.equal(readlinkSync(join(dir, '.share/reports/2024/mon graphique.png')), '../../../out/chart.png');
    t.same(await (await app.api(`${base}/ls/.share`)).json(), [
      { name: 'reports', type: 'directory' },
      { name: 'chart.png', type: 'file', size: 3 },
    ]);

    r = await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'docs/été.md', link_name: 'chart.png' } });
    t.same(await r.json(), { path: '.share/chart.png', target: 'docs/été.md' }, 'sharing again under a taken link name moves the link');
    t.equal(await (await app.api(`${base}/files/.share/chart.png`)).text(), 'r');
    writeFileSync(join(dir, '.share/real.txt'), 'real');
    r = await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'docs/été.md', link_name: 'real.txt' } });
    t.equal(r.status, 409, 'a real file in the way is not replaced');

    t.equal((await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'nope.txt' } })).status, 404);
    t.equal((await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'out/chart.png', link_name: 'a/b' } })).status, 422);
    t.equal((await app.api(`${base}/share-file`, { method: 'POST', json: {} })).status, 422, 'source_path is required');
    const up = await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'out/chart.png', share_folder: '..' } });
    t.equal(up.status, 422, 'share_folder cannot leave .share');
    t.equal((await up.json()).code, 'PATH_OUTSIDE_WORKSPACE');
  });

  t.test('the endpoints are in the OpenAPI document', async (t) => {
    const doc = await (await app.api('/api/openapi.json')).json();
    const paths = Object.keys(doc.paths);
    // The documented names, never the router's `{*}` (a generated client took it literally).
    for (const p of ['ls/{dir_path}', 'files/{file_path}', 'files/{file_path}/rename', 'files/{file_path}/copy', 'upload/{dir_path}', 'download-dir/{dir_path}'])
      t.ok(paths.includes(`/api/sessions/{session_id}/${p}`), p);
    t.notOk(paths.some((p) => p.includes('{*}')), 'no wildcard placeholder left');
    t.ok(paths.includes('/api/sessions/{session_id}/share-file'));
  });
});
