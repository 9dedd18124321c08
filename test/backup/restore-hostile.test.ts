import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pack as tarPack } from 'tar-stream';
import { EntryDigest, FORMAT, MANIFEST, TRAILER } from '../../src/features/backup/archive.js';
import { assertFreshBuild, cli } from '../appliance/cli-helpers.js';
import { tempHome } from '../helpers/nodes.js';

/**
 * `agentsvc restore` of an archive made to escape (docs/backup.md, "Restoring an archive you did
 * not make"): each is crafted here with a valid manifest and, unless cut, a valid trailer (so only
 * the entries are wrong). Every one must be refused with a message naming the entry, write nothing
 * outside the home (the would-be outside path is checked), and leave the target as it was. A
 * crafted archive without such entries restores, and lands in place.
 */
t.setTimeout(300_000);
assertFreshBuild();

type Crafted = { name: string; type: 'file' | 'directory' | 'symlink' | 'link'; linkname?: string; data?: string; mode?: number };

/** A format 2 archive: the manifest (no tables), `entries`, and the trailer over them unless `cut`. */
async function craft(entries: Crafted[], cut = false): Promise<Buffer> {
  const digest = new EntryDigest();
  const p = tarPack();
  const chunks: Buffer[] = [];
  p.on('data', (c: Buffer) => chunks.push(c));
  const ended = once(p, 'end');
  const manifest = Buffer.from(
    JSON.stringify({ format: FORMAT, version: 2, created_at: new Date().toISOString(), agentsvc_version: 'test', server_version: '17', migrations: [], tables: [], sequences: [] }),
  );
  digest.begin(MANIFEST, 'file');
  digest.data(manifest);
  p.entry({ name: MANIFEST, type: 'file', mode: 0o600 }, manifest);
  for (const e of entries) {
    const data = Buffer.from(e.data ?? '');
    digest.begin(e.name, e.type, e.linkname ?? '');
    if (e.type === 'file') digest.data(data);
    p.entry(
      { name: e.name, type: e.type, linkname: e.linkname, mode: e.mode ?? (e.type === 'directory' ? 0o755 : 0o644), size: e.type === 'file' ? data.length : 0 },
      e.type === 'file' ? data : undefined,
    );
  }
  if (!cut) {
    const trailer = Buffer.from(JSON.stringify({ entries: digest.entries, bytes: digest.bytes, sha256: digest.digest(), rows: {} }));
    p.entry({ name: TRAILER, type: 'file', mode: 0o600 }, trailer);
  }
  p.finalize();
  await ended;
  const tar = Buffer.concat(chunks);
  // Cut: the end-of-archive blocks gone too, as a copy that stopped early.
  return cut ? tar.subarray(0, tar.length - 1024) : tar;
}

/** Every entry below `dir` (links as their targets, files as their content), by relative path. */
function listing(dir: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(dir, rel)).sort()) {
    const r = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(dir, r));
    if (st.isSymbolicLink()) out[r] = `-> ${readlinkSync(join(dir, r))}`;
    else if (st.isDirectory()) Object.assign(out, { [`${r}/`]: 'dir' }, listing(dir, r));
    else out[r] = readFileSync(join(dir, r), 'utf8');
  }
  return out;
}

const USER = 'u_1';

t.test('archives made to escape are refused, and nothing is written outside', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'agentsvc-hostile-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  // The folder the archives aim at: it holds one file that must stay as it is.
  const outside = join(work, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'host file');
  const outsideBefore = listing(outside);
  const x = (p: string) => join(outside, p);

  const cases: [string, Crafted[], RegExp, string[]][] = [
    // The review's probe: a link, then a file through it (finding 4), under home/ and snapshots/.
    [
      'home: a link to outside, then a file through it',
      [
        { name: 'home/evil', type: 'symlink', linkname: outside },
        { name: 'home/evil/x.txt', type: 'file', data: 'pwned' },
      ],
      /entry "home\/evil" is a symbolic link .*links are restored only in users' trees/,
      [x('x.txt')],
    ],
    [
      'home: a link as a folder of the path (inside skills/)',
      [
        { name: 'home/skills', type: 'directory' },
        { name: 'home/skills/d', type: 'symlink', linkname: outside },
        { name: 'home/skills/d/sub/x.txt', type: 'file', data: 'pwned' },
      ],
      /entry "home\/skills\/d" is a symbolic link/,
      [x('sub')],
    ],
    [
      'snapshots: a link to outside, then a file through it',
      [
        { name: 'snapshots/evil', type: 'symlink', linkname: outside },
        { name: 'snapshots/evil/x.txt', type: 'file', data: 'pwned' },
      ],
      /entry "snapshots\/evil" is a symbolic link/,
      [x('x.txt')],
    ],
    // Links are kept in users' trees, but nothing is ever written through one.
    [
      'users: a link (absolute target), then a file through it',
      [
        { name: `users/${USER}/s1/evil`, type: 'symlink', linkname: outside },
        { name: `users/${USER}/s1/evil/x.txt`, type: 'file', data: 'pwned' },
      ],
      new RegExp(`entry "users/${USER}/s1/evil/x.txt" goes through users/${USER}/s1/evil, which is a symbolic link`),
      [x('x.txt')],
    ],
    [
      'users: a relative link as an intermediate folder',
      [
        { name: `users/${USER}/s1/up`, type: 'symlink', linkname: '../../../../../../../../../../..' + outside },
        { name: `users/${USER}/s1/up/sub/x.txt`, type: 'file', data: 'pwned' },
      ],
      /goes through users\/u_1\/s1\/up, which is a symbolic link/,
      [x('sub')],
    ],
    [
      'users: a link to a folder inside the tree, then a file through it',
      [
        { name: `users/${USER}/s1/real`, type: 'directory' },
        { name: `users/${USER}/s1/alias`, type: 'symlink', linkname: 'real' },
        { name: `users/${USER}/s1/alias/x.txt`, type: 'file', data: 'through a link' },
      ],
      /goes through users\/u_1\/s1\/alias, which is a symbolic link/,
      [],
    ],
    [
      'users: a file, then an entry below it',
      [
        { name: `users/${USER}/s1/f`, type: 'file', data: 'a file' },
        { name: `users/${USER}/s1/f/x.txt`, type: 'file', data: 'below a file' },
      ],
      /goes through users\/u_1\/s1\/f, which is a symbolic link or a file/,
      [],
    ],
    [
      'users: a folder, then a link of the same name',
      [
        { name: `users/${USER}/s1/d`, type: 'directory' },
        { name: `users/${USER}/s1/d`, type: 'symlink', linkname: outside },
      ],
      /entry "users\/u_1\/s1\/d" is in it twice/,
      [],
    ],
    ['a ../ name', [{ name: '../escape.txt', type: 'file', data: 'pwned' }], /entry "\.\.\/escape\.txt" is not a plain relative name/, [join(work, 'escape.txt')]],
    ['a ../ name inside home/', [{ name: `home/skills/../../../outside/x.txt`, type: 'file', data: 'pwned' }], /is not a plain relative name/, [x('x.txt')]],
    ['an absolute name', [{ name: x('abs.txt'), type: 'file', data: 'pwned' }], /is not a plain relative name/, [x('abs.txt')]],
    [
      'a hard link to a file outside',
      [
        { name: 'home/skills', type: 'directory' },
        { name: 'home/skills/h', type: 'link', linkname: x('secret.txt') },
      ],
      /entry "home\/skills\/h" is a link entry; a backup holds only files, folders and symbolic links/,
      [],
    ],
    ['a hard link in a user tree', [{ name: `users/${USER}/s1/h`, type: 'link', linkname: x('secret.txt') }], /is a link entry/, []],
    [
      'home/ beyond its own files',
      [{ name: 'home/run/url', type: 'file', data: 'http://evil' }],
      /entry "home\/run\/url" is not one of home\/'s config\.json, admin\.key, frontend_config, skills, solutions/,
      [],
    ],
    ['a user folder that is not a user name', [{ name: 'users/.snapshots/x', type: 'file', data: 'x' }], /does not name a user folder/, []],
  ];

  for (const [what, entries, message, outsidePaths] of cases) {
    const file = join(work, 'a.tar');
    writeFileSync(file, await craft(entries));
    const target = tempHome(t);
    const r = cli(['restore', file, '--home', target], {});
    t.equal(r.code, 1, `${what}: refused`);
    t.match(r.stderr, message, `${what}: ${r.stderr.trim()}`);
    for (const p of outsidePaths) t.notOk(existsSync(p), `${what}: nothing at ${p}`);
    t.same(listing(outside), outsideBefore, `${what}: the outside folder as it was`);
    t.same(readdirSync(target), [], `${what}: the home left empty`);
  }

  t.test('cut before its trailer: refused as truncated or for its link, nothing outside', async (t) => {
    for (const area of ['home', 'snapshots', `users/${USER}/s1`]) {
      const file = join(work, 'cut.tar');
      writeFileSync(
        file,
        await craft(
          [
            { name: `${area}/evil`, type: 'symlink', linkname: outside },
            { name: `${area}/evil/x.txt`, type: 'file', data: 'pwned' },
          ],
          true,
        ),
      );
      const target = tempHome(t);
      const r = cli(['restore', file, '--home', target], {});
      t.equal(r.code, 1, `${area}: refused`);
      t.match(r.stderr, /the archive is refused: entry|truncated/, `${area}: ${r.stderr.trim()}`);
      t.notOk(existsSync(x('x.txt')), `${area}: nothing written outside`);
      t.same(readdirSync(target), [], `${area}: the home left empty`);
    }
    // Cut in the middle of a file, nothing hostile: refused, and the file is not left.
    const whole = await craft([{ name: `users/${USER}/s1/big.bin`, type: 'file', data: 'x'.repeat(100_000) }]);
    const file = join(work, 'cut2.tar');
    writeFileSync(file, whole.subarray(0, 50_000));
    const target = tempHome(t);
    const r = cli(['restore', file, '--home', target], {});
    t.equal(r.code, 1);
    t.match(r.stderr, /corrupt or truncated: Unexpected end of data/);
    t.same(readdirSync(target), [], 'the home left empty');
  });

  t.test('--force over an install: a hostile archive leaves it as it was', async (t) => {
    const target = tempHome(t);
    writeFileSync(join(target, 'keep.txt'), 'mine');
    mkdirSync(join(target, 'skills'));
    writeFileSync(join(target, 'skills', 'mine.md'), 'my skill');
    const before = listing(target);
    const file = join(work, 'force.tar');
    writeFileSync(
      file,
      await craft([
        { name: 'home/skills', type: 'directory' },
        { name: 'home/skills/ok.md', type: 'file', data: 'staged, then dropped' },
        { name: `users/${USER}/s1/evil`, type: 'symlink', linkname: outside },
        { name: `users/${USER}/s1/evil/x.txt`, type: 'file', data: 'pwned' },
      ]),
    );
    const r = cli(['restore', file, '--home', target, '--force'], {});
    t.equal(r.code, 1, 'refused');
    t.match(r.stderr, /goes through users\/u_1\/s1\/evil/);
    t.same(listing(target), before, 'the install is back, entry for entry (no staging or set-aside folder left)');
    t.notOk(existsSync(x('x.txt')), 'nothing written outside');
  });

  t.test('a --home that did not exist is not left behind', async (t) => {
    const target = join(work, 'new', 'home');
    const file = join(work, 'new.tar');
    writeFileSync(file, await craft([{ name: 'home/evil', type: 'symlink', linkname: outside }]));
    const r = cli(['restore', file, '--home', target], {});
    t.equal(r.code, 1);
    t.notOk(existsSync(join(work, 'new')), 'the folders the restore made are gone');
  });
});

t.test('a crafted archive with nothing hostile restores into place', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'agentsvc-benign-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const file = join(work, 'ok.tar');
  writeFileSync(
    file,
    await craft([
      { name: 'home/skills', type: 'directory', mode: 0o750 },
      { name: 'home/skills/one', type: 'directory' },
      { name: 'home/skills/one/SKILL.md', type: 'file', data: '# one' },
      { name: 'snapshots/u_1', type: 'directory', mode: 0o700 },
      { name: 'snapshots/u_1/s1.git', type: 'directory', mode: 0o700 },
      { name: 'snapshots/u_1/s1.git/HEAD', type: 'file', data: 'ref: refs/heads/main\n' },
      { name: `users/${USER}/s1`, type: 'directory' },
      { name: `users/${USER}/s1/a.txt`, type: 'file', data: 'hello' },
      { name: `users/${USER}/s1/leak`, type: 'symlink', linkname: '/etc/hostname' },
      { name: `users/${USER}/s1/suid`, type: 'file', data: '#!/bin/sh\n', mode: 0o6755 },
    ]),
  );
  const target = tempHome(t);
  const r = cli(['restore', file, '--home', target, '--json'], {});
  t.equal(r.code, 0, `restored: ${r.stderr}`);
  t.equal(readFileSync(join(target, 'skills', 'one', 'SKILL.md'), 'utf8'), '# one');
  t.equal(lstatSync(join(target, 'skills')).mode & 0o777, 0o750, 'a folder gets its mode');
  t.equal(readFileSync(join(target, 'workspaces', '.snapshots', 'u_1', 's1.git', 'HEAD'), 'utf8'), 'ref: refs/heads/main\n');
  t.equal(readFileSync(join(target, 'workspaces', USER, 's1', 'a.txt'), 'utf8'), 'hello');
  t.equal(readlinkSync(join(target, 'workspaces', USER, 's1', 'leak')), '/etc/hostname', 'a link in a user tree is restored as the link');
  t.equal(lstatSync(join(target, 'workspaces', USER, 's1', 'suid')).mode & 0o7777, 0o755, 'set-user-ID and set-group-ID bits are not restored');
  t.notOk(existsSync(join(target, '.agentsvc-restore-staging')), 'no staging folder left');
});
