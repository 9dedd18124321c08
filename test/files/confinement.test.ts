import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sessionHostDir } from '../../src/core/files/paths.js';
import { build, type TestApp } from '../helpers/app.js';
import { createSession } from '../helpers/chat.js';
import { filesFixture, uploadForm } from '../helpers/files.js';

type Call = [method: string, path: string, init?: { json?: unknown; form?: () => FormData }];

/** Every endpoint, aimed at `p` (already URL-encoded where it needs to be). */
function everyEndpoint(p: string): Call[] {
  const form = () => uploadForm([['pwned', 'pwned.txt']]);
  return [
    ['GET', `ls/${p}`],
    ['GET', `files/${p}`],
    ['PUT', `files/${p}`, { json: { content: 'pwned' } }],
    ['DELETE', `files/${p}`],
    ['POST', `files/${p}/rename`, { json: { new_name: 'pwned' } }],
    ['POST', `files/${p}/copy`],
    ['POST', `upload/${p}`, { form }],
    ['GET', `download-dir/${p}`],
    ['POST', 'share-file', { json: { source_path: decodeURIComponent(p) || '.' } }],
  ];
}

const call = (app: TestApp, base: string, [method, path, init]: Call, key?: string) => app.api(`${base}/${path}`, { method, key, json: init?.json, body: init?.form?.() });

t.test('nothing outside the session folder is reachable', async (t) => {
  const { app, dir, base } = await filesFixture(t);
  // A folder beside the workspace standing in for /etc, so that a leak would be visible and harmless.
  const outside = mkdtempSync(join(tmpdir(), 'agentsvc-outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  writeFileSync(join(outside, 'passwd'), 'root:x:0:0');
  mkdirSync(join(outside, 'sub'));
  const snapshot = () => JSON.stringify(readdirSync(outside, { recursive: true }).sort()) + readFileSync(join(outside, 'passwd'), 'utf8');
  const before = snapshot();
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'inside.txt'), 'in');
  symlinkSync('/etc', join(dir, 'etc-link'));
  symlinkSync(outside, join(dir, 'out-link'));
  symlinkSync(join(outside, 'passwd'), join(dir, 'passwd-link'));
  symlinkSync('../../../../../../../../../nonexistent-target', join(dir, 'dangling'));
  mkdirSync(join(dir, 'd'));
  symlinkSync(outside, join(dir, 'd/nested-out'));

  const attempts = [
    '..%2F..%2Fetc%2Fpasswd',
    '..%2F..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd',
    '%2Fetc%2Fpasswd',
    '/etc/passwd',
    'd%2F..%2F..',
    'out-link%2Fpasswd',
    'etc-link%2Fpasswd',
    'd/nested-out/passwd',
    'out-link%2Fsub',
    'out-link%2Fnew.txt',
    'out-link%2Fnewdir%2Fnew.txt',
  ];
  for (const p of attempts) {
    t.test(`refused everywhere: ${decodeURIComponent(p)}`, async (t) => {
      for (const c of everyEndpoint(p)) {
        const r = await call(app, base, c);
        const body = await r.json();
        t.equal(r.status, 422, `${c[0]} ${c[1]}`);
        t.equal(body.code, 'PATH_OUTSIDE_WORKSPACE', `${c[0]} ${c[1]} code`);
      }
    });
  }

  t.test('links that lead out cannot be read, zipped, copied or shared; the link itself may be removed', async (t) => {
    for (const link of ['etc-link', 'out-link', 'passwd-link']) {
      for (const c of [
        ['GET', `files/${link}`],
        ['GET', `ls/${link}`],
        ['GET', `download-dir/${link}`],
        ['POST', `files/${link}/copy`],
        ['PUT', `files/${link}`, { json: { content: 'x' } }],
        ['POST', 'share-file', { json: { source_path: link } }],
      ] as Call[]) {
        const r = await call(app, base, c);
        t.equal(r.status, 422, `${c[0]} ${c[1]}`);
      }
    }
    const dangling = await app.api(`${base}/files/dangling`, { method: 'PUT', json: { content: 'x' } });
    t.not(dangling.status, 200, 'no write through a dangling link');
    t.notOk(existsSync('/nonexistent-target'));

    // Listing shows the links without following them out.
    const ls = await (await app.api(`${base}/ls/`)).json();
    t.same(
      ls.find((e: { name: string }) => e.name === 'passwd-link'),
      { name: 'passwd-link', type: 'file', size: 0 },
    );
    t.same(
      ls.find((e: { name: string }) => e.name === 'etc-link'),
      { name: 'etc-link', type: 'file', size: 0 },
    );

    // A ZIP of the whole workspace leaves every escaping link out.
    const zip = Buffer.from(await (await app.api(`${base}/download-dir/`)).arrayBuffer());
    t.notOk(zip.includes('root:x:0:0'), 'the outside file is not in the ZIP');
    t.notOk(zip.includes('etc-link'), 'nor the links');
    t.ok(zip.includes('inside.txt'));

    // Renaming or deleting the link acts on the link only.
    let r = await app.api(`${base}/files/out-link/rename`, { method: 'POST', json: { new_name: 'renamed-link' } });
    t.same(await r.json(), { path: 'renamed-link' });
    t.ok(lstatSync(join(dir, 'renamed-link')).isSymbolicLink());
    r = await app.api(`${base}/files/renamed-link`, { method: 'DELETE' });
    t.same(await r.json(), { deleted: true });
    t.notOk(existsSync(join(dir, 'renamed-link')));
    r = await app.api(`${base}/files/d`, { method: 'DELETE' });
    t.same(await r.json(), { deleted: true }, 'a folder holding an escaping link');
    t.equal(snapshot(), before, 'the outside folder is exactly as it was');
    t.ok(existsSync('/etc/passwd'));
  });

  t.test('upload `paths` and file names cannot leave the workspace; nothing is stored', async (t) => {
    for (const paths of [['../../escape.txt'], ['/etc/pwned.txt'], ['etc-link/pwned.txt'], ['passwd-link']]) {
      const fd = uploadForm([['pwned', 'a.txt']], paths);
      const r = await app.api(`${base}/upload/`, { method: 'POST', body: fd });
      t.equal(r.status, 422, paths[0]);
      t.equal((await r.json()).code, 'PATH_OUTSIDE_WORKSPACE');
    }
    t.equal(readFileSync(join(outside, 'passwd'), 'utf8'), 'root:x:0:0');
    t.notOk(existsSync(join(dir, '..', 'escape.txt')));
  });

  t.test('share-file: the link folder cannot be moved out through a link', async (t) => {
    symlinkSync(outside, join(dir, '.share-out'));
    mkdirSync(join(dir, '.share'), { recursive: true });
    symlinkSync(outside, join(dir, '.share/evil'));
    const r = await app.api(`${base}/share-file`, { method: 'POST', json: { source_path: 'inside.txt', share_folder: 'evil' } });
    t.equal(r.status, 422);
    t.equal(snapshot(), before);
  });
});

t.test("another user's session: 404 on every endpoint, nothing touched", async (t) => {
  const app = await build(t);
  const alice = await app.newUser();
  const bob = await app.newUser();
  const id = await createSession(app, alice.key);
  const dir = sessionHostDir(app.home, alice.userId, id);
  mkdirSync(join(dir, 'folder'), { recursive: true });
  writeFileSync(join(dir, 'secret.txt'), 'secret');
  const base = `/api/sessions/${id}`;
  for (const target of ['secret.txt', 'folder', '']) {
    for (const c of everyEndpoint(target)) {
      const r = await call(app, base, c, bob.key);
      t.equal(r.status, 404, `${c[0]} ${c[1]}`);
      t.same(await r.json(), { detail: 'session not found', code: 'NOT_FOUND' });
    }
  }
  for (const c of everyEndpoint('secret.txt')) {
    const r = await call(app, '/api/sessions/sess_doesnotexist', c, alice.key);
    t.equal(r.status, 404, `unknown session: ${c[0]} ${c[1]}`);
  }
  t.equal(readFileSync(join(dir, 'secret.txt'), 'utf8'), 'secret');
  t.same(readdirSync(dir).sort(), ['folder', 'secret.txt']);
  t.notOk(existsSync(sessionHostDir(app.home, bob.userId, id)), 'no folder made for bob');
  const r = await app.api(`${base}/files/secret.txt`, { key: alice.key });
  t.equal(await r.text(), 'secret', 'alice still reads it');
  t.equal((await app.api(`${base}/ls/`, { key: null })).status, 401, 'no key');
});
