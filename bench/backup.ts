// `agentsvc backup` and `agentsvc restore` of an install with G GiB of workspace files (files of
// 1 MiB of random bytes in sessions of 100 files, written by the bench straight into the session
// folders) while `up` runs: wall time, throughput and the CLI process's peak RSS (VmHWM: it must
// not grow with the install), for a plain tar and a gzip archive. The disk's own speed for the same
// bytes (`cat` of the files to /dev/null; cp -r and a sync, again each round) is printed beside it,
// with the one-minute load average (other work on the machine slows every figure). TURNS turns (about
// 400 bytes of text each, the shape a chat leaves) are inserted into the sessions by SQL.
// With `base=DIR` (a built checkout, e.g. of the previous commit) its CLI backs up the same install
// too, alternately with ours, so both are measured under the same load.
// Usage: npx tsx bench/backup.ts [GiB=1] [TURNS=100000] [base=DIR] [repeat=1] [formats=tar,tar.gz]
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/platform/config/index.js';
import { openDatabase } from '../src/platform/db/index.js';

const named = Object.fromEntries(process.argv.slice(2).filter((a) => a.includes('=')).map((a) => a.split('=', 2)));
const positional = process.argv.slice(2).filter((a) => !a.includes('='));
const GIB = Number(positional[0] ?? 1);
const TURNS = Number(positional[1] ?? 100_000);
const BASE_BIN = named.base ? join(named.base, 'bin', 'run.js') : null;
const REPEAT = Number(named.repeat ?? 1);
const FORMATS: string[] = (named.formats ?? 'tar,tar.gz').split(',');
const FILE = 1024 * 1024;
const FILES = Math.round((GIB * 1024 ** 3) / FILE);
const PER_SESSION = 100;
const BIN = join(import.meta.dirname, '..', 'bin', 'run.js');
const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-backup-'));
const home = join(tmp, 'home');
const env = { ...process.env, AGENTSVC_HOME: home, OPENAI_API_KEY: 'none', AGENTSVC_LOG_LEVEL: 'warn' };

const up = spawn(process.execPath, [BIN, 'up', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  up.once('exit', (c) => reject(new Error(`up exited ${c}: ${out}`)));
  up.stdout!.on('data', (c) => {
    out += c;
    const m = /listening on (\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
});
const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
// A failing step must not leave `up` (and its database) running.
process.on('uncaughtException', (e) => {
  console.error(e);
  up.kill('SIGTERM');
  up.once('exit', () => process.exit(1));
});
const api = async (path: string, body?: unknown) => {
  const r = await fetch(url + path, { method: body ? 'POST' : 'GET', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  return r.json() as Promise<any>;
};
const me = await api('/api/auth/me');

const t0 = Date.now();
const block = randomBytes(FILE);
for (let i = 0; i < FILES; i += PER_SESSION) {
  const { session_id } = await api('/api/sessions', { intent: `bench ${i}` });
  const dir = join(home, 'workspaces', me.id, session_id, 'data');
  mkdirSync(dir, { recursive: true });
  for (let j = i; j < Math.min(FILES, i + PER_SESSION); j++) {
    block.writeUInt32LE(j, 0); // every file distinct
    writeFileSync(join(dir, `f${j}.bin`), block);
  }
}
const sessions = Math.ceil(FILES / PER_SESSION);
const t1 = Date.now();
const db = await openDatabase(loadConfig({ env: { ...env } }), { migrate: false, poolMax: 1, role: 'cli' });
const perSession = Math.ceil(TURNS / sessions);
const text = `${'The quick brown fox jumps over the lazy dog. '.repeat(9)}`;
// knex bindings: one `?` each, in order.
await db.sql(
  `insert into turns (id, session_id, sequence, turn_id, role, status, blocks, text)
   select 'tb_' || s.n || '_' || g, s.id, 1000 + g, 'bench' || g, case when g % 2 = 0 then 'user' else 'assistant' end, 'completed',
          jsonb_build_array(jsonb_build_object('type', 'text', 'text', ?::text)), ?::text
   from (select id, row_number() over (order by id) as n from sessions where user_id = ?) s, generate_series(1, ?::int) g
   where (s.n - 1) * ?::int + g <= ?::int`,
  [text, text, me.id, perSession, perSession, TURNS],
);
const [{ n: turns }] = await db.sql<{ n: string }>('select count(*) as n from turns');
const [{ size }] = await db.sql<{ size: string }>("select pg_size_pretty(pg_total_relation_size('turns')) as size");
await db.close();
console.log(
  `install: ${FILES} files of 1 MiB in ${sessions} sessions, written in ${((t1 - t0) / 1000).toFixed(1)} s; ` +
    `${turns} turns (${size} with indexes) inserted in ${((Date.now() - t1) / 1000).toFixed(1)} s`,
);
spawnSync('sync');

/** Runs the CLI; wall time and its peak RSS (VmHWM, read until it exits). */
async function timed(args: string[], extraEnv: Record<string, string> = {}, bin = BIN): Promise<{ s: number; peakMiB: number; out: string }> {
  const start = Date.now();
  const child = spawn(process.execPath, [bin, ...args], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  let peak = 0;
  const sample = setInterval(() => {
    try {
      peak = Math.max(peak, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024);
    } catch {}
  }, 20);
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  clearInterval(sample);
  if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}: ${out}`);
  return { s: (Date.now() - start) / 1000, peakMiB: peak, out };
}

const mibs = (bytes: number, s: number) => `${(bytes / 1024 ** 2 / s).toFixed(0)} MiB/s`;
const bytes = FILES * FILE;
const read0 = Date.now();
spawnSync('sh', ['-c', `find ${join(home, 'workspaces')} -type f -exec cat {} + > /dev/null`]);
const readS = (Date.now() - read0) / 1000;
console.log(`disk: cat of the workspace files to /dev/null ${readS.toFixed(1)} s (${mibs(bytes, readS)})`);
/** The disk's speed for the same bytes: cp -r of the workspaces and a sync (each round, under that round's load). */
const copyAndSync = (): number => {
  spawnSync('sync');
  const disk = Date.now();
  spawnSync('sh', ['-c', `cp -r ${join(home, 'workspaces')} ${join(tmp, 'copy')} && sync`]);
  const s = (Date.now() - disk) / 1000;
  rmSync(join(tmp, 'copy'), { recursive: true, force: true });
  return s;
};
const load = () => `load ${loadavg()[0].toFixed(1)}`;

// What the CLI takes before it moves a byte (oclif, the store, a database connection): the baseline of the peaks below.
const idle = await timed(['keys', 'list']);
const rows: string[] = [`baseline: agentsvc keys list ${idle.s.toFixed(1)} s, peak RSS ${idle.peakMiB.toFixed(0)} MiB`];
const builds: [string, string][] = [['this build', BIN], ...(BASE_BIN ? [['base', BASE_BIN] as [string, string]] : [])];
for (let round = 0; round < REPEAT; round++) {
  const diskS = copyAndSync();
  rows.push(`disk: cp -r of the workspaces + sync ${diskS.toFixed(1)} s (${mibs(bytes, diskS)}), ${load()}`);
  for (const name of FORMATS.map((f) => `install.${f}`)) {
    for (const [label, bin] of builds) {
      spawnSync('sync');
      const archive = join(tmp, name);
      const b = await timed(['backup', '-o', archive, '--json'], {}, bin);
      const size = statSync(archive).size;
      const target = join(tmp, `restored-${name}`);
      const r = await timed(['restore', archive, '--home', target, '--json'], { AGENTSVC_HOME: target }, bin);
      rows.push(
        `${name.padEnd(15)}${BASE_BIN ? ` ${label.padEnd(10)}` : ''} backup ${b.s.toFixed(1).padStart(5)} s (${mibs(bytes, b.s)}, ${(b.s / diskS).toFixed(1)}x cp+sync), ` +
          `peak RSS ${b.peakMiB.toFixed(0)} MiB (+${(b.peakMiB - idle.peakMiB).toFixed(0)}), archive ${(size / 1024 ** 2).toFixed(0)} MiB | ` +
          `restore ${r.s.toFixed(1).padStart(5)} s (${mibs(bytes, r.s)}), peak RSS ${r.peakMiB.toFixed(0)} MiB, ${load()}`,
      );
      rmSync(archive, { force: true });
      rmSync(target, { recursive: true, force: true });
    }
  }
}
console.log(rows.join('\n'));
up.kill('SIGTERM');
await new Promise((r) => up.once('exit', r));
rmSync(tmp, { recursive: true, force: true });
