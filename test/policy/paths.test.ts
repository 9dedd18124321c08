import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SessionFolder } from '../../src/core/files/confine.js';
import { SessionFolders, type SessionSandbox } from '../../src/core/files/session-folder.js';
import { confinedPath, walkedPath } from '../../src/features/policy/targets.js';

// docs/policy.md: a path rule sees the path the file tools would touch. The policy resolves it with
// SessionFolder.resolveNow (synchronous lstat and readlink by path, no descriptor per folder);
// this checks it against the confined walk itself on every kind of link.
t.test('resolveNow answers exactly what the confined walk answers', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'policy-paths-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const ws = new SessionFolders(root, null).forSession('user_p', 'sess_p');
  await ws.files.write('src/app.ts', 'x');
  const dir = join(root, 'user_p', 'sess_p');
  mkdirSync(join(dir, 'secrets', 'deep'), { recursive: true });
  writeFileSync(join(dir, 'secrets', 'key'), 'k');
  symlinkSync('../secrets', join(dir, 'src', 'safe')); // a folder link into secrets/
  symlinkSync('secrets/key', join(dir, 'notes.md')); // a file link
  symlinkSync(join(dir, 'secrets'), join(dir, 'abs')); // an absolute link inside
  symlinkSync('/computer/ws/secrets', join(dir, 'vm')); // absolute, as the computer sees the folder
  symlinkSync('/etc', join(dir, 'etc-link')); // out of the workspace
  symlinkSync('secrets/missing', join(dir, 'dangling')); // dangling, into secrets/
  symlinkSync('src', join(dir, 'a')); // a link whose `..` is not the lexical one
  symlinkSync('loop2', join(dir, 'loop1'));
  symlinkSync('loop1', join(dir, 'loop2'));
  symlinkSync('secrets/key/../deep', join(dir, 'past-file')); // a target through a file
  symlinkSync('safe/../../secrets', join(dir, 'src', 'up')); // `..` after a link in a target
  const paths = [
    'src/app.ts', './src/../secrets/key', 'src/new.ts', 'new/dir/deep/file', 'secrets/deep/new', '', '.', `${dir}/src/app.ts`, `${dir}/secrets/x`,
    'src/safe/key', 'src/safe/new', 'src/safe/deep/more/new', 'notes.md', 'notes.md/x', 'src/app.ts/x', 'abs/key', 'abs/new/x', 'vm/key', 'vm/new/x',
    '/computer/ws/src/app.ts', 'etc-link/passwd', 'dangling', 'dangling/x', 'a/app.ts', 'a/../secrets/key', 'src/safe/../src/app.ts', 'src/up/key',
    'loop1', 'loop2/x', '../outside', '/etc/passwd', 'src\\app.ts', 'a\0b',
  ];
  const folder = new SessionFolder(ws.folder.base, 'user_p', 'sess_p', { computerDir: '/computer/ws' });
  const viaComputer = { ...ws, folder } as SessionSandbox;
  const wrong: string[] = [];
  for (const p of paths) {
    const [now, walked] = [confinedPath(viaComputer, p), await walkedPath(viaComputer, p)];
    if (now !== walked) wrong.push(`${JSON.stringify(p)}: ${now} vs walked ${walked}`);
  }
  t.same(wrong, [], 'every path resolves as the confined walk resolves it');
  t.equal(confinedPath(ws, 'src/safe/new'), 'secrets/new', 'a link into secrets/ is seen through');
  t.equal(confinedPath(ws, 'vm/key'), null, 'an absolute link names the folder as the computer sees it');
  t.equal(confinedPath(viaComputer, 'vm/key'), 'secrets/key');
  t.equal(confinedPath(ws, 'dangling'), null, 'a dangling link: every pattern matches');
  t.equal(confinedPath(ws, 'loop1'), null, 'a link loop: every pattern matches');
  // A link whose target goes on past a file: the tools fail on it; the walk's fallback names the
  // link itself, resolveNow answers null (every pattern matches), the stricter of the two.
  t.equal(confinedPath(ws, 'past-file'), null, 'a link through a file');
  t.equal(confinedPath(ws, 'past-file/x'), null);
  // The synchronous walk stays short: past 128 folders it answers null (every pattern matches).
  const deep = Array.from({ length: 130 }, () => 'd').join('/');
  mkdirSync(join(dir, deep), { recursive: true });
  t.equal(confinedPath(ws, `${deep}/f`), null, 'a path 131 folders deep');
  t.equal(confinedPath(ws, `${deep.slice(0, 2 * 100)}f`), `${deep.slice(0, 2 * 100)}f`, 'one 100 deep');
  t.equal(confinedPath(ws, 'new/dir/deep/file'), 'new/dir/deep/file', 'a path that does not exist yet is kept as given');

  // The session folder itself: missing (made empty by the tools), or a planted link (refused).
  const fresh = new SessionFolders(root, null).forSession('user_p', 'sess_new');
  t.equal(confinedPath(fresh, './x/../y/z'), 'y/z', 'a session with no folder yet');
  t.equal(await walkedPath(fresh, './x/../y/z'), 'y/z');
  symlinkSync(dir, join(root, 'user_p', 'sess_link'));
  const planted = new SessionFolders(root, null).forSession('user_p', 'sess_link');
  t.equal(confinedPath(planted, 'src/app.ts'), null, 'a session folder that is a link is refused');
  t.equal(await walkedPath(planted, 'src/app.ts'), null);
});
