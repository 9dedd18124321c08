// Checkpoint cost: a workspace of F files / S MB with one file changed between snapshots (p50/p95),
// rewind (restore) time, and storage growth over 100 checkpoints of small edits against the bytes
// changed. Usage: npx tsx bench/checkpoints.ts [files=1000] [MB=100] [edit bytes=110] [edits=random|text]
// random: base64 of random bytes (incompressible, the worst case); text: code-like words (zlib
// compresses them as it does source code).
// BASELINE=<path of another snapshots.ts> measures that implementation first, then this one, in the
// same run, and prints the figures side by side (e.g. the previous commit's, checked out to a
// scratch path beside src/features/timetravel so its imports resolve).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Snapshots } from '../src/features/timetravel/snapshots.js';

type Impl = typeof Snapshots;

const FILES = Number(process.argv[2] ?? 1000);
const MB = Number(process.argv[3] ?? 100);
const EDIT = Number(process.argv[4] ?? 110);
const KIND = process.argv[5] ?? 'random';
const WORDS = 'const let return function if else for while await async import export from new this value result error data item list map set get push length index key name path file read write open close string number true false null undefined'.split(' ');
const line = (n: number) => {
  if (KIND !== 'text') return `${randomBytes(Math.ceil((n * 3) / 4)).toString('base64').slice(0, n - 1)}\n`;
  let s = '';
  while (s.length < n - 1) s += `${WORDS[randomBytes(1)[0] % WORDS.length]}${'(.; ='[randomBytes(1)[0] % 5]}`;
  return `${s.slice(0, n - 1)}\n`;
};
const rows: Record<string, string[]> = {};
const say = (label: string, value: string) => (rows[label] ??= []).push(value);

async function measure(Impl: Impl) {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-bench-cp-'));
  const user = 'user_bench';
  const session = 'sess_bench';
  const dir = join(root, user, session);
  mkdirSync(join(dir, 'src'), { recursive: true, mode: 0o700 });
  const per = Math.floor((MB * 1024 * 1024) / FILES);
  for (let i = 0; i < FILES; i++) writeFileSync(join(dir, 'src', `f${i}.bin`), randomBytes(per));
  const snaps = new Impl(root, { fileLimit: 10 * 1024 * 1024 });
  const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
  const du = () => Number(execFileSync('du', ['-sb', join(root, '.snapshots')]).toString().split('\t')[0]);

  let t0 = performance.now();
  const first = await snaps.take(user, session);
  const firstMs = performance.now() - t0;
  await snaps.idle();
  say(`first checkpoint of ${FILES} files, ${MB} MB`, `${firstMs.toFixed(0)} ms (${first.files} files)`);
  say('  packed in the background, done after', `${(performance.now() - t0).toFixed(0)} ms`);
  say('  store', `${(du() / 1048576).toFixed(1)} MiB`);

  const base = du();
  const times: number[] = [];
  const trees: string[] = [];
  let changed = 0;
  let notes = '';
  for (let i = 0; i < 100; i++) {
    // A small edit: one line appended; `changed` counts the new bytes only.
    const edit = line(EDIT);
    notes += edit;
    writeFileSync(join(dir, 'notes.txt'), notes);
    changed += edit.length;
    t0 = performance.now();
    trees.push((await snaps.take(user, session)).tree);
    times.push(performance.now() - t0);
  }
  // Right after the last checkpoint the newest objects are still loose (packed once the session
  // has been idle for 2 s); idle() runs that pack now.
  const loose = du() - base;
  await snaps.idle();
  const packed = du() - base;
  say('checkpoint with 1 file changed (100 checkpoints)', `p50 ${pct(times, 50).toFixed(1)} ms, p95 ${pct(times, 95).toFixed(1)} ms`);
  say(`storage growth, 100 ${EDIT}-byte ${KIND} appends (${(changed / 1024).toFixed(1)} KiB)`, `${(packed / 1024).toFixed(1)} KiB (${(packed / changed).toFixed(2)}x) packed`);
  say('  before the idle pack', `${(loose / 1024).toFixed(1)} KiB (${(loose / changed).toFixed(2)}x)`);

  const rewinds: number[] = [];
  for (const tree of [trees[10], trees[90], first.tree, trees[50], trees[99]]) {
    t0 = performance.now();
    await snaps.restore(user, session, tree);
    rewinds.push(performance.now() - t0);
  }
  say('rewind (restore) of the same workspace', `p50 ${pct(rewinds, 50).toFixed(0)} ms, max ${Math.max(...rewinds).toFixed(0)} ms`);
  if (process.env.KEEP) console.log(root);
  else rmSync(root, { recursive: true, force: true });
}

const impls: [string, Impl][] = [];
if (process.env.BASELINE) impls.push(['baseline', (await import(process.env.BASELINE)).Snapshots as Impl]);
impls.push(['this tree', Snapshots]);
for (const [, impl] of impls) await measure(impl);
const width = Math.max(...Object.keys(rows).map((k) => k.length));
console.log(`${''.padEnd(width)}  ${impls.map(([n]) => n.padEnd(22)).join('  ')}`);
for (const [k, vs] of Object.entries(rows)) console.log(`${k.padEnd(width)}  ${vs.map((v) => v.padEnd(22)).join('  ')}`);
