import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Snapshots } from '../../src/timetravel/snapshots.js';

/**
 * The snapshot store keeps no ref per snapshot and packs in the background (geometric roll-ups of
 * loose objects and small packs): every tree a checkpoint names must survive that, exactly.
 */
t.test('packing keeps every snapshot: early and middle trees restore exactly after roll-ups', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-snaps-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'user_t', 'sess_t');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const snaps = new Snapshots(root, { fileLimit: 1 << 20 });
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  const first = await snaps.take('user_t', 'sess_t');
  const trees: string[] = [];
  let notes = '';
  // 3 objects per snapshot (blob, tree, root tree): past 64 loose objects a pack starts at once.
  for (let i = 0; i < 40; i++) {
    notes += `line ${i} ${'x'.repeat(i)}\n`;
    mkdirSync(join(dir, 'log'), { recursive: true });
    writeFileSync(join(dir, 'log', 'notes.txt'), notes);
    trees.push((await snaps.take('user_t', 'sess_t')).tree);
  }
  await snaps.idle();
  const gitDir = join(root, '.snapshots', 'user_t', 'sess_t.git');
  const count = execFileSync('git', [`--git-dir=${gitDir}`, 'count-objects', '-v'], { encoding: 'utf8' });
  t.match(count, /^count: 0$/m, 'nothing left loose once idle');
  // Each pack run rolls loose objects and the small packs into one (geometric, factor 16): the
  // pack made at 64 loose objects and the one made at idle are at most two.
  t.ok(Number(/^packs: (\d+)$/m.exec(count)?.[1]) <= 2, `at most two packs: ${count}`);
  t.notOk(existsSync(join(gitDir, 'refs', 'snapshots')), 'no ref per snapshot');
  t.equal(execFileSync('git', [`--git-dir=${gitDir}`, 'config', 'gc.auto'], { encoding: 'utf8' }).trim(), '0', 'the store never gcs on its own');

  t.equal(await snaps.restore('user_t', 'sess_t', first.tree), 1);
  t.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'one\n');
  t.notOk(existsSync(join(dir, 'log', 'notes.txt')), 'a file made later is removed');
  await snaps.restore('user_t', 'sess_t', trees[19]);
  t.equal(readFileSync(join(dir, 'log', 'notes.txt'), 'utf8'), notes.split('\n').slice(0, 20).join('\n') + '\n', 'a middle version, byte for byte');
  await snaps.restore('user_t', 'sess_t', trees[39]);
  t.equal(readFileSync(join(dir, 'log', 'notes.txt'), 'utf8'), notes);
  t.same(readdirSync(dir).sort(), ['a.txt', 'log']);
  await snaps.remove('user_t', 'sess_t');
  t.notOk(existsSync(gitDir), 'removed with the session');
});
