/**
 * The trust boundary (docs/trust-boundary.md) for checkpoints: the service (often root) reads a user's session
 * folder into a snapshot and writes a snapshot back into it on a rewind, while the user's own
 * commands (a background Bash task) may change that folder at any moment. A subfolder swapped for
 * a link to a host folder must never be read into a snapshot (a rewind would then copy host files
 * into the user's tree) nor written through (root writing outside).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Snapshots } from '../../src/features/timetravel/snapshots.js';

const FILES = 100;

/** Names and content hashes of a folder's entries (files only). */
const fingerprint = (dir: string) =>
  readdirSync(dir)
    .sort()
    .map((n) => `${n}:${createHash('sha1').update(readFileSync(join(dir, n))).digest('hex')}`);

t.test('a subfolder flipped between a folder and a link to a host folder: nothing outside is read into a snapshot or written by a rewind', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-race-'));
  const outside = mkdtempSync(join(tmpdir(), 'agentsvc-outside-'));
  t.teardown(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });
  for (let i = 0; i < 20; i++) writeFileSync(join(outside, `host-secret-${i}.txt`), `host file ${i}\n`);
  const hostBefore = fingerprint(outside);

  const dir = join(root, 'user_t', 'sess_r');
  const d = join(dir, 'd');
  mkdirSync(d, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'top.txt'), 'top\n');
  for (let i = 0; i < FILES; i++) writeFileSync(join(d, `f${i}.txt`), `user file ${i}\n`);
  const snaps = new Snapshots(root, { fileLimit: 1 << 20 });
  t.teardown(() => snaps.close());
  const base = await snaps.take('user_t', 'sess_r');
  t.equal(base.files, FILES + 1, 'the checkpoint to rewind to holds d/ with its files');

  // What a background Bash task of the user does in their own tree: `d` becomes a link to a host
  // folder, then a folder again, as fast as it can.
  const flip = `const f=require('fs');const d=${JSON.stringify(d)},o=${JSON.stringify(outside)};const spin=(ms)=>{const e=performance.now()+ms;while(performance.now()<e);};for(;;){try{f.mkdirSync(d)}catch{}spin(1);try{f.rmSync(d,{recursive:true,force:true})}catch{}try{f.symlinkSync(o,d)}catch{}spin(1);try{f.unlinkSync(d)}catch{}}`;
  const flipper = spawn(process.execPath, ['-e', flip], { stdio: 'ignore' });
  t.teardown(() => flipper.kill('SIGKILL'));

  const hostChanged = () => fingerprint(outside).join('\n') !== hostBefore.join('\n');
  // Checkpoints alone first (the read side), then checkpoints and rewinds (the write side).
  const leaked = new Set<string>();
  const failedRewinds = new Map<string, number>();
  const rounds = { take: 0, rewind: 0 };
  for (const rewind of [false, true]) {
    const deadline = Date.now() + 30_000;
    for (let i = 0; i < 60 && Date.now() < deadline && !leaked.size && !hostChanged(); i++) {
      const snap = await snaps.take('user_t', 'sess_r');
      rounds.take++;
      for (const f of await snaps.files('user_t', 'sess_r', snap.tree)) if (/host-secret/.test(f.path)) leaked.add(f.path);
      if (!rewind) continue;
      await snaps.restore('user_t', 'sess_r', base.tree).catch((e: NodeJS.ErrnoException) => failedRewinds.set(e.code ?? 'other', (failedRewinds.get(e.code ?? 'other') ?? 0) + 1));
      rounds.rewind++;
    }
  }
  flipper.kill('SIGKILL');
  // A rewind into a folder the user deletes under it fails (ENOENT), as any write there would.
  t.comment(`${rounds.take} checkpoints and ${rounds.rewind} rewinds raced the flipper; rewinds that failed: ${JSON.stringify(Object.fromEntries(failedRewinds))}`);
  t.ok(rounds.take >= 1, 'the race ran');
  t.same([...leaked], [], 'no host file was read into a snapshot');
  t.same(fingerprint(outside), hostBefore, 'nothing was written outside the session folder');

  // Once the user stops, a rewind brings back exactly the checkpoint.
  rmSync(d, { recursive: true, force: true });
  t.equal(await snaps.restore('user_t', 'sess_r', base.tree), FILES + 1);
  t.equal(readdirSync(d).length, FILES, 'd/ restored as a folder with its files');
  t.equal(readFileSync(join(d, 'f7.txt'), 'utf8'), 'user file 7\n');
});
