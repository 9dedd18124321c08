/**
 * What path denies cost a sandbox start (docs/policy-paths.md): `npx tsx bench/path-denies.ts`.
 * Per available runner, in the same run: exec `true` in a session folder of ~1000 files without a
 * path policy, then with three denies (a folder, a glob over every folder, a write deny) covering
 * 12 entries; for docker also the exec that remakes the container after the covered set changed.
 * Env: AGENTSVC_TEST_IMAGE (default agentsvc-test:latest), BENCH_N (default 60).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDockerRunner } from '../runners/docker/index.js';
import { createLocalRunner } from '../runners/local/index.js';
import { deniedEntries } from '../runners/path-denies.js';
import { foldersRoot } from '../runners/shared.js';
import type { PathDenySet, Runner } from '../runners/types.js';
import { SessionFolders } from '../src/core/files/session-folder.js';
import { pct, timed } from './lib/timing.js';

const N = Number(process.env.BENCH_N ?? 60);
const IMAGE = process.env.AGENTSVC_TEST_IMAGE ?? 'agentsvc-test:latest';
const SET: PathDenySet = {
  every: [
    { glob: 'secrets/**', access: 'all' },
    { glob: '**/*.pem', access: 'all' },
    { glob: 'vendor/**', access: 'write' },
  ],
  sessions: {},
};

async function times(n: number, once: () => Promise<unknown>): Promise<string> {
  const t = await timed(n, once);
  return `p50 ${pct(t, 50).toFixed(1)} ms, p99 ${pct(t, 99).toFixed(1)} ms (n=${n})`;
}

async function bench(name: string, home: string, runner: Runner, docker: boolean): Promise<void> {
  const check = await runner.check();
  if (!check.ok || check.warning) {
    console.log(`# ${name}: skipped, ${check.error ?? check.warning}`);
    return;
  }
  const user = `bench-paths-${process.pid}-${randomBytes(3).toString('hex')}`;
  try {
    const c = await runner.acquire(user);
    const files = new SessionFolders(foldersRoot({ home }), null).home(c);
    for (let d = 0; d < 50; d++) for (let f = 0; f < 20; f++) await files.write(`s1/src/d${d}/f${f}.ts`, 'x');
    for (let i = 0; i < 10; i++) await files.write(`s1/secrets/k${i}`, 'k');
    for (let i = 0; i < 10; i++) await files.write(`s1/src/d${i}/key.pem`, 'k');
    await files.write('s1/vendor/lib.js', 'v');
    const exec = () => c.exec('true', { cwd: 's1' });
    await exec();
    if (!docker) {
      // Alternating, one of each in turn: the machine's noise falls on both alike.
      const off: number[] = [];
      const on: number[] = [];
      for (let i = 0; i < N; i++) {
        for (const [policy, into] of [[null, off], [async () => SET, on]] as const) {
          runner.setPathPolicy(policy);
          const t0 = performance.now();
          await exec();
          into.push(performance.now() - t0);
        }
      }
      for (const [what, t] of [['no path policy', off], ['3 denies covering 12 entries of ~1030', on]] as const) {
        t.sort((a, b) => a - b);
        console.log(`${name}\texec true, ${what} (alternating)\tp50 ${pct(t, 50).toFixed(1)} ms, p99 ${pct(t, 99).toFixed(1)} ms (n=${N})`);
      }
      const host = join(foldersRoot({ home }), user);
      console.log(`${name}\tthe walk alone (deniedEntries)\t${await times(N, () => deniedEntries(host, SET))}`);
      return;
    }
    console.log(`${name}\texec true, no path policy\t${await times(N, exec)}`);
    runner.setPathPolicy(async () => SET);
    console.log(`${name}\tfirst exec after the covered set changed (container made again)\t${await times(1, exec)}`);
    console.log(`${name}\texec true, 3 denies covering 12 entries of ~1030\t${await times(N, exec)}`);
    {
      let i = 0;
      console.log(`${name}\texec after each change of the covered set (a new .pem each time)\t${await times(5, async () => {
        await files.write(`s1/new${i++}.pem`, 'k');
        await exec();
      })}`);
    }
  } finally {
    runner.setPathPolicy(null);
    await runner.reset(user).catch(() => {});
    await runner.close();
  }
}

const local = mkdtempSync(join(tmpdir(), 'bench-paths-local-'));
// Traversable, as a root service's sandbox user needs (the workspaces inside stay 0700).
chmodSync(local, 0o711);
const dock = mkdtempSync(join(tmpdir(), 'bench-paths-docker-'));
try {
  await bench('local', local, createLocalRunner({ home: local }), false);
  await bench('docker', dock, createDockerRunner({ home: dock, image: IMAGE }), true);
} finally {
  rmSync(local, { recursive: true, force: true });
  rmSync(dock, { recursive: true, force: true });
}
