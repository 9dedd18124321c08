import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Workspaces } from '../../src/files/workspace.js';
import { confinedPath, walkedPath } from '../../src/policy/targets.js';

// CONTRACT 15: a path rule sees the path the file tools would touch. Paths with no link on them
// are answered from the kernel's resolution (SessionFolder.linkFree) instead of a descriptor per
// folder; this checks that shortcut against the confined walk on every kind of link.
t.test('the link-free shortcut answers exactly what the confined walk answers', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'policy-paths-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const ws = new Workspaces(root, null).forSession('user_p', 'sess_p');
  await ws.files.write('src/app.ts', 'x');
  const dir = join(root, 'user_p', 'sess_p');
  mkdirSync(join(dir, 'secrets', 'deep'), { recursive: true });
  writeFileSync(join(dir, 'secrets', 'key'), 'k');
  symlinkSync('../secrets', join(dir, 'src', 'safe')); // a folder link into secrets/
  symlinkSync('secrets/key', join(dir, 'notes.md')); // a file link
  symlinkSync(join(dir, 'secrets'), join(dir, 'abs')); // an absolute link inside
  symlinkSync('/etc', join(dir, 'etc-link')); // out of the workspace
  symlinkSync('secrets/missing', join(dir, 'dangling')); // dangling, into secrets/
  symlinkSync('src', join(dir, 'a')); // a link whose `..` is not the lexical one
  const paths = [
    'src/app.ts', './src/../secrets/key', 'src/new.ts', 'new/dir/deep/file', 'secrets/deep/new', '', '.', `${dir}/src/app.ts`, `${dir}/secrets/x`,
    'src/safe/key', 'src/safe/new', 'src/safe/deep/more/new', 'notes.md', 'abs/key', 'abs/new/x', 'etc-link/passwd', 'dangling', 'dangling/x',
    'a/app.ts', 'a/../secrets/key', 'src/safe/../src/app.ts', '../outside', '/etc/passwd', 'src\\app.ts',
  ];
  const wrong: string[] = [];
  let shortcut = 0;
  for (const p of paths) {
    const [fast, walked] = [await confinedPath(ws, p), await walkedPath(ws, p)];
    if (fast !== walked) wrong.push(`${JSON.stringify(p)}: ${fast} vs walked ${walked}`);
    if ((await ws.folder.linkFree(p)) !== undefined) shortcut++;
  }
  t.same(wrong, [], 'every path resolves as the confined walk resolves it');
  t.equal(await confinedPath(ws, 'src/safe/new'), 'secrets/new', 'a link into secrets/ is seen through');
  t.equal(await ws.folder.linkFree('src/safe/new'), undefined, 'a path through a link is never taken from the shortcut');
  t.equal(await ws.folder.linkFree('dangling'), undefined, 'nor a dangling link');
  t.equal(await ws.folder.linkFree('new/dir/deep/file'), 'new/dir/deep/file', 'a path that does not exist yet is');
  t.ok(shortcut >= 8, `${shortcut} of ${paths.length} paths answered by the shortcut`);
});
