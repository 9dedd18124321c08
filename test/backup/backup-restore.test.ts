import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { assertFreshBuild, cli } from '../appliance/cli-helpers.js';
import { record, subscribe, untilEnd } from '../helpers/chat.js';
import { boot, modelEnv, tempHome } from '../helpers/nodes.js';
import { request } from '../helpers/socket.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { backedUp, json, script, served, storeObjects, tree } from './helpers.js';

/**
 * `agentsvc backup` of a live install and `agentsvc restore` into a fresh home (docs/operations.md): the
 * restored service answers the same keys, sessions, turns, files (byte for byte) and checkpoints
 * (a rewind works); a non-empty home is refused untouched; `--force` over an install puts it back
 * when the restore fails. Split over backup-restore, backup-archives and backup-restore-url.test.ts so that each
 * file stays well under a minute (together they took 93 s in a loaded CI run).
 */
t.setTimeout(600_000);
assertFreshBuild();

t.test('round trip of a live install into a fresh home (embedded database)', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = script;
  const { up, sid, bob, user, home, out, archive, backup: b } = await backedUp(t, modelEnv(model));
  const before = await served(up, sid);
  t.equal(before.checkpoints.length, 2, 'two checkpoints before the backup');
  t.equal(b.code, 0, `backup while up runs: ${b.stderr}`);
  const made = JSON.parse(b.stdout);
  t.ok(made.rows.turns >= 4 && made.rows.checkpoints === 2 && made.rows.api_keys === 2, `rows: ${JSON.stringify(made.rows)}`);
  t.notOk(existsSync(`${archive}.part`), 'no .part left');
  t.ok(cli(['backup', '-o', archive], { AGENTSVC_HOME: home }).stderr.includes('exists'), 'an existing file needs --force');

  const home2 = tempHome(t);
  const r = cli(['restore', archive, '--home', home2, '--json'], {});
  t.equal(r.code, 0, `restore: ${r.stderr}`);
  const restored = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: home2 });
  t.equal(restored.key, up.key, 'admin.key came along');
  t.same(await served(restored, sid), before, 'same user, sessions, turns, checkpoints and file');
  const bobMe = await json(await restored.api('/api/auth/me', { key: bob }));
  t.equal(bobMe.username, 'bob', "bob's key (created by the CLI) authenticates after restore");
  const tree1 = tree(join(home, 'workspaces', user));
  t.same(tree(join(home2, 'workspaces', user)), tree1, 'the user tree byte for byte');
  t.equal(tree1[`${sid}/leak`], '-> /etc/hostname', 'a link is restored as the same link, never as the content it points to');
  const stores = storeObjects(join(home, 'workspaces', '.snapshots'));
  t.ok(Object.values(stores).some((objects) => objects.some((o) => / tree /.test(o)) && objects.some((o) => / blob /.test(o))), `the source install holds snapshot trees and blobs: ${JSON.stringify(stores)}`);
  t.same(storeObjects(join(home2, 'workspaces', '.snapshots')), stores, 'checkpoint stores hold the same objects');

  const cps = await json(await restored.api(`/api/sessions/${sid}/checkpoints`));
  const rw = await json(await restored.api(`/api/sessions/${sid}/rewind`, { method: 'POST', json: { checkpoint_id: cps[1].checkpoint_id } }));
  t.equal(rw.restored_files, 1, 'rewind after restore');
  t.equal(await (await restored.api(`/api/sessions/${sid}/files/a.txt`)).text(), 'v1\n', 'a.txt as before the second chat');
  const sock = await restored.socket();
  const seen = record(sock);
  await subscribe(sock, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'again' })).ok, true, 'the restored session chats on');
  await untilEnd(seen, sid, 30_000);

  t.test('a home served by up is refused, even with --force', async (t) => {
    const x = cli(['restore', archive, '--home', home2, '--force'], {});
    t.equal(x.code, 1);
    t.match(x.stderr, /served by a running agentsvc up/);
  });

  t.test('a non-empty home without --force is refused and left as it was', async (t) => {
    const home3 = tempHome(t);
    writeFileSync(join(home3, 'keep.txt'), 'mine');
    const x = cli(['restore', archive, '--home', home3], {});
    t.equal(x.code, 1);
    t.match(x.stderr, /is not empty \(keep\.txt\).*--force/);
    t.same(readdirSync(home3), ['keep.txt'], 'nothing written');
  });

  t.test('--force over an install: a failed restore puts it back, a good one replaces it', async (t) => {
    const home3 = tempHome(t);
    t.equal(cli(['restore', archive, '--home', home3], {}).code, 0, 'an install to replace (with its embedded database)');
    writeFileSync(join(home3, 'keep.txt'), 'mine');
    const was = tree(home3);
    const cut = join(out, 'cut.tar');
    const tar = gunzipSync(readFileSync(archive));
    writeFileSync(cut, tar.subarray(0, tar.length - 20_000));
    const bad = cli(['restore', cut, '--home', home3, '--force'], {});
    t.equal(bad.code, 1, 'a truncated archive is refused');
    t.match(bad.stderr, /corrupt or truncated/);
    t.same(tree(home3), was, 'the home is back as it was, byte for byte (database files included)');
    const ok = cli(['restore', archive, '--home', home3, '--force'], {});
    t.equal(ok.code, 0, `restore --force: ${ok.stderr}`);
    t.notOk(existsSync(join(home3, 'keep.txt')), 'what was there is gone');
    t.notOk(existsSync(join(home3, '.agentsvc-restore-previous')), 'nothing set aside is left');
    t.same(tree(join(home3, 'workspaces', user)), tree(join(home, 'workspaces', user)), 'the archive\'s files');
    // A restore killed halfway leaves what it set aside: the next one must not overwrite it.
    writeFileSync(join(home3, '.agentsvc-restore-previous'), '');
    const again = cli(['restore', archive, '--home', home3, '--force'], {});
    t.equal(again.code, 1);
    t.match(again.stderr, /left from an earlier restore/);
  });
});
