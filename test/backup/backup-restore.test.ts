import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { extract as tarExtract, pack as tarPack, type Headers } from 'tar-stream';
import { EntryDigest, MANIFEST, TRAILER } from '../../src/features/backup/archive.js';
import { assertFreshBuild, cli } from '../appliance/cli-helpers.js';
import { record, subscribe, untilEnd } from '../helpers/chat.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { kill } from '../helpers/cli.js';
import { boot, modelEnv, type Running, tempHome } from '../helpers/nodes.js';
import { request } from '../helpers/socket.js';
import { startFakeModel } from '../fixtures/fake-model.js';

/**
 * `agentsvc backup` of a live install and `agentsvc restore` into a fresh home (docs/operations.md): the
 * restored service answers the same keys, sessions, turns, files (byte for byte) and checkpoints
 * (a rewind works); a non-empty home is refused untouched; corrupt and truncated archives are
 * refused with a clear message and leave the target empty.
 */
t.setTimeout(600_000);
assertFreshBuild();

function script(body: any) {
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { text: ['done'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'one') return { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'v1\n' } }] };
  if (user === 'two') return { toolCalls: [{ name: 'Edit', args: { file_path: 'a.txt', old_string: 'v1', new_string: 'v2' } }] };
  return { text: [`echo ${user}`] };
}

const json = async (r: Response) => {
  if (r.status !== 200) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
  return r.json() as Promise<any>;
};

/** What a client sees of the install, for comparing before and after. */
async function served(n: Running, sid: string) {
  const me = await json(await n.api('/api/auth/me'));
  const sessions = (await json(await n.api('/api/sessions'))).items.map((s: any) => [s.id, s.intent, s.created_at]);
  const messages = (await json(await n.api(`/api/sessions/${sid}/messages`))).map((m: any) => [m.id, m.role, JSON.stringify(m.blocks)]);
  const checkpoints = (await json(await n.api(`/api/sessions/${sid}/checkpoints`))).map((c: any) => [c.checkpoint_id, c.label, c.files]);
  const file = await (await n.api(`/api/sessions/${sid}/files/a.txt`)).text();
  return { me: [me.id, me.username], sessions, messages, checkpoints, file };
}

/** sha256 of every regular file below `dir` (links as their targets), by relative path. */
function tree(dir: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isSymbolicLink()) out[r] = `-> ${readlinkSync(join(dir, r))}`;
    else if (e.isDirectory()) Object.assign(out, tree(dir, r));
    else out[r] = createHash('sha256').update(readFileSync(join(dir, r))).digest('hex');
  }
  return out;
}

/**
 * The objects of every snapshot store below `dir` (id, type, size), by store: what a store holds,
 * whether loose or packed (the live install packs its loose objects when a session goes idle,
 * which may be after the backup read them).
 */
function storeObjects(dir: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (!e.isDirectory()) continue;
      if (!e.name.endsWith('.git')) {
        walk(r);
        continue;
      }
      const listed = spawnSync('git', ['--git-dir', join(dir, r), 'cat-file', '--batch-all-objects', '--batch-check'], { encoding: 'utf8' });
      out[r] = listed.stdout.trim().split('\n').sort();
    }
  };
  walk('');
  return out;
}

type TarEntry = { header: Headers; data: Buffer };

async function tarEntries(tar: Buffer): Promise<TarEntry[]> {
  const ex = tarExtract();
  const out: TarEntry[] = [];
  const read = (async () => {
    for await (const e of ex as unknown as AsyncIterable<AsyncIterable<Buffer> & { header: Headers }>) {
      const parts: Buffer[] = [];
      for await (const c of e) parts.push(c);
      out.push({ header: e.header, data: Buffer.concat(parts) });
    }
  })();
  ex.end(tar);
  await read;
  return out;
}

/** The entries packed again in the order given, as archive format `version`, the trailer's checksum made anew. */
async function repack(entries: TarEntry[], version: number): Promise<Buffer> {
  const digest = new EntryDigest();
  const p = tarPack();
  const chunks: Buffer[] = [];
  p.on('data', (c: Buffer) => chunks.push(c));
  const ended = once(p, 'end');
  for (const { header, data: original } of entries) {
    let data = original;
    if (header.name === MANIFEST) data = Buffer.from(JSON.stringify({ ...JSON.parse(data.toString()), version }));
    if (header.name === TRAILER) data = Buffer.from(JSON.stringify({ ...JSON.parse(data.toString()), entries: digest.entries, bytes: digest.bytes, sha256: digest.digest() }));
    else {
      digest.begin(header.name, header.type!, header.linkname ?? '');
      digest.data(data);
    }
    p.entry({ ...header, size: data.length }, data);
  }
  p.finalize();
  await ended;
  return Buffer.concat(chunks);
}

async function liveInstall(t: any, env: Record<string, string>) {
  const up = await boot(t, env);
  const bob = JSON.parse(cli(['keys', 'create', '--name', 'bob-laptop', '--user', 'bob', '--create-user', '--json'], { AGENTSVC_HOME: env.AGENTSVC_HOME, ...(env.DATABASE_URL ? { DATABASE_URL: env.DATABASE_URL } : {}) }).stdout);
  const { session_id: sid } = await json(await up.api('/api/sessions', { method: 'POST', json: { intent: 'backup me' } }));
  const sock = await up.socket();
  const seen = record(sock);
  await subscribe(sock, sid);
  for (const [i, message] of ['one', 'two'].entries()) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true, `chat ${message}`);
    await untilEnd(seen, sid, 30_000, i + 1);
  }
  // Bytes no text API would carry, and a link out of the tree that must stay a link.
  const user = (await json(await up.api('/api/auth/me'))).id;
  const folder = join(env.AGENTSVC_HOME, 'workspaces', user, sid);
  writeFileSync(join(folder, 'blob.bin'), randomBytes(3 * 1024 * 1024 + 17));
  symlinkSync('/etc/hostname', join(folder, 'leak'));
  return { up, sid, bob: bob.plaintext as string, user };
}

t.test('round trip of a live install into a fresh home (embedded database)', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = script;
  const home = tempHome(t);
  const { up, sid, bob, user } = await liveInstall(t, { ...modelEnv(model), AGENTSVC_HOME: home });
  const before = await served(up, sid);
  t.equal(before.checkpoints.length, 2, 'two checkpoints before the backup');

  const out = mkdtempSync(join(tmpdir(), 'agentsvc-backup-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const archive = join(out, 'install.tar.gz');
  const b = cli(['backup', '-o', archive, '--json'], { AGENTSVC_HOME: home });
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

  t.test('format 2 pieces end at rows; format 1 order and pieces around files restore the same', async (t) => {
    const entries = await tarEntries(gunzipSync(readFileSync(archive)));
    t.equal(JSON.parse(entries[0].data.toString()).version, 2, 'backup writes format 2');
    const db = entries.filter((e) => e.header.name.startsWith('db/'));
    t.ok(db.every((e) => e.data.length === 0 || e.data.at(-1) === 10), 'every table piece ends at a row');
    const files = entries.filter((e) => !e.header.name.startsWith('db/'));
    const homeEnd = files.findIndex((e) => !/^(home\/|agentsvc-backup\.json$)/.test(e.header.name));
    // Format 1: every table before the checkpoints and the files.
    const v1 = [...files.slice(0, homeEnd), ...db, ...files.slice(homeEnd)];
    // A table's rows cut inside a row, with files between the two pieces: its COPY must stay open.
    const turns = db.findIndex((e) => e.header.name === 'db/turns/000001');
    const piece = db[turns];
    t.ok(piece && piece.data.indexOf(10) > 2, 'turns were backed up');
    const cut = Math.floor(piece.data.indexOf(10) / 2);
    const renumbered = (e: TarEntry, n: number) => ({ header: { ...e.header, name: `db/turns/${String(n).padStart(6, '0')}` }, data: e.data });
    const laterTurns = db.slice(turns + 1).filter((e) => e.header.name.startsWith('db/turns/'));
    const blob = files.findIndex((e) => e.header.name.endsWith('/blob.bin'));
    const v2 = [
      ...files.slice(0, homeEnd),
      ...db.slice(0, turns),
      { header: piece.header, data: piece.data.subarray(0, cut) },
      ...files.slice(homeEnd, blob + 1),
      renumbered({ header: piece.header, data: piece.data.subarray(cut) }, 2),
      ...laterTurns.map((e, i) => renumbered(e, i + 3)),
      ...db.slice(turns + 1).filter((e) => !e.header.name.startsWith('db/turns/')),
      ...files.slice(blob + 1),
    ];
    t.equal(v1.length, entries.length);
    t.equal(v2.length, entries.length + 1);
    for (const [name, list, version] of [['v1.tar', v1, 1], ['v2-split.tar', v2, 2]] as const) {
      const file = join(out, name);
      writeFileSync(file, await repack(list, version));
      const target = tempHome(t);
      const x = cli(['restore', file, '--home', target, '--json'], {});
      t.equal(x.code, 0, `${name}: restored: ${x.stderr}`);
      if (x.code !== 0) continue;
      t.same(JSON.parse(x.stdout).rows, made.rows, `${name}: the same rows`);
      t.same(tree(join(target, 'workspaces', user)), tree(join(home, 'workspaces', user)), `${name}: the same files`);
    }
  });

  t.test('corrupt and truncated archives: a clear error, the target left empty', async (t) => {
    const tar = gunzipSync(readFileSync(archive));
    const cases: [string, Buffer, RegExp][] = [];
    // A byte of blob.bin's content flipped: tar has no data checksum, the trailer does.
    const flipped = Buffer.from(tar);
    const at = flipped.indexOf(Buffer.from('blob.bin')) + 4096;
    flipped[at] ^= 0xff;
    cases.push(['flipped.tar', flipped, /archive is corrupt: its checksum does not match/]);
    cases.push(['truncated.tar', tar.subarray(0, tar.length - 20_000), /corrupt or truncated: Unexpected end of data/]);
    const gz = readFileSync(archive);
    const badGz = Buffer.from(gz);
    badGz[Math.floor(gz.length / 2)] ^= 0xff;
    cases.push(['bad.tar.gz', badGz, /corrupt or truncated: incorrect data check/]);
    cases.push(['random.bin', randomBytes(10_000), /not a readable backup archive|not an agentsvc backup/]);
    for (const [name, bytes, message] of cases) {
      const file = join(out, name);
      writeFileSync(file, bytes);
      const target = tempHome(t);
      const x = cli(['restore', file, '--home', target], {});
      t.equal(x.code, 1, `${name}: refused`);
      t.match(x.stderr, message, `${name}: ${x.stderr.trim()}`);
      t.same(readdirSync(target), [], `${name}: nothing left in the home`);
    }
  });
});

t.test('round trip with DATABASE_URL', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = script;
  const [dbA, dbB] = [await freshDatabaseUrl(t), await freshDatabaseUrl(t)];
  const home = tempHome(t);
  const { up, sid, bob } = await liveInstall(t, { ...modelEnv(model), AGENTSVC_HOME: home, DATABASE_URL: dbA });
  const before = await served(up, sid);
  const archive = join(home, '..', `${home.split('/').pop()}.tar`);
  t.teardown(() => rmSync(archive, { force: true }));
  t.equal(cli(['backup', '-o', archive], { AGENTSVC_HOME: home, DATABASE_URL: dbA }).code, 0, 'backup (plain tar)');

  const into = tempHome(t);
  const refused = cli(['restore', archive, '--home', into], { DATABASE_URL: dbA });
  t.equal(refused.code, 1, 'a database that holds an install is refused');
  t.match(refused.stderr, /already holds an install/);
  t.same(readdirSync(into), [], 'nothing written');

  const r = cli(['restore', archive, '--home', into], { DATABASE_URL: dbB });
  t.equal(r.code, 0, `restore into another database: ${r.stderr}`);
  const restored = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: into, DATABASE_URL: dbB });
  t.same(await served(restored, sid), before, 'same sessions, turns, checkpoints and file');
  t.equal((await json(await restored.api('/api/auth/me', { key: bob }))).username, 'bob');

  // --force over that install (stopped): a failed restore keeps the database, a good one replaces it.
  await kill(restored.up.child, 'SIGTERM');
  const carol = JSON.parse(cli(['keys', 'create', '--name', 'c', '--user', 'carol', '--create-user', '--json'], { AGENTSVC_HOME: into, DATABASE_URL: dbB }).stdout).plaintext as string;
  const cut = `${archive}.cut`;
  t.teardown(() => rmSync(cut, { force: true }));
  writeFileSync(cut, readFileSync(archive).subarray(0, -20_000));
  const bad = cli(['restore', cut, '--home', into, '--force'], { DATABASE_URL: dbB });
  t.equal(bad.code, 1, 'a truncated archive is refused');
  const kept = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: into, DATABASE_URL: dbB });
  t.equal((await json(await kept.api('/api/auth/me', { key: carol }))).username, 'carol', 'the failed restore left the database as it was');
  await kill(kept.up.child, 'SIGTERM');
  const forced = cli(['restore', archive, '--home', into, '--force'], { DATABASE_URL: dbB });
  t.equal(forced.code, 0, `restore --force: ${forced.stderr}`);
  const replaced = await boot(t, { ...modelEnv(model), AGENTSVC_HOME: into, DATABASE_URL: dbB });
  t.same(await served(replaced, sid), before, 'the archive\'s install');
  t.equal((await replaced.api('/api/auth/me', { key: carol })).status, 401, 'a key made after the backup is gone');
});
