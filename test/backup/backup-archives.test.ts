import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { assertFreshBuild, cli } from '../appliance/cli-helpers.js';
import { modelEnv, tempHome } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { backedUp, repack, script, type TarEntry, tarEntries, tree } from './helpers.js';

/**
 * The archive `agentsvc backup` writes (docs/operations.md): format 2 table pieces end at rows, and
 * format 1's order and pieces around files restore the same; corrupt and truncated archives are
 * refused with a clear message and leave the target empty. Split over backup-restore, backup-archives and backup-restore-url.test.ts so that each
 * file stays well under a minute (together they took 93 s in a loaded CI run).
 */
t.setTimeout(600_000);
assertFreshBuild();

t.test('the archive of a live install (embedded database)', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = script;
  const { user, home, out, archive, backup: b } = await backedUp(t, modelEnv(model));
  t.equal(b.code, 0, `backup while up runs: ${b.stderr}`);
  const made = JSON.parse(b.stdout);

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
