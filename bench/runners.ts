/**
 * Runner round trips: `npx tsx bench/runners.ts`. Per available runner: exec `true` (200 times),
 * readFile of 1 MB (50 times), and for docker the first use of a computer (container create +
 * start) with fresh users. A runner that cannot run here is listed with the reason.
 * Env: AGENTSVC_TEST_IMAGE (default agentsvc-test:latest), BENCH_EXEC_N, BENCH_READ_N, BENCH_FIRST_N.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDockerRunner } from '../runners/docker/index.js';
import { createLocalRunner } from '../runners/local/index.js';
import type { Runner } from '../runners/types.js';
import { foldersRoot } from '../runners/shared.js';
import { SessionFolders } from '../src/core/files/session-folder.js';

const EXEC_N = Number(process.env.BENCH_EXEC_N ?? 200);
const READ_N = Number(process.env.BENCH_READ_N ?? 50);
const FIRST_N = Number(process.env.BENCH_FIRST_N ?? 3);
const IMAGE = process.env.AGENTSVC_TEST_IMAGE ?? 'agentsvc-test:latest';

interface Row {
  runner: string;
  what: string;
  n: number;
  p50: number;
  p99: number;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function measure(runner: string, what: string, n: number, once: (i: number) => Promise<unknown>): Promise<Row> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await once(i);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { runner, what, n, p50: pct(times, 50), p99: pct(times, 99) };
}

const user = (tag: string) => `bench-${tag}-${process.pid}-${randomBytes(3).toString('hex')}`;

async function bench(name: string, runner: Runner, firstUse: boolean): Promise<Row[]> {
  const check = await runner.check();
  if (!check.ok) {
    console.log(`# ${name}: skipped, ${check.error}`);
    return [];
  }
  if (check.warning) console.log(`# ${name}: ${check.warning}`);
  const rows: Row[] = [];
  const u = user('main');
  try {
    const c = await runner.acquire(u);
    await c.exec('true'); // warm up: the first exec can pay for page cache and lazy setup
    rows.push(await measure(name, 'exec true', EXEC_N, async () => {
      const r = await c.exec('true');
      if (r.exitCode !== 0) throw new Error(`exec true failed: ${r.stderr}`);
    }));
    // The service reads a computer's files through the confined file layer, never through the runner.
    const files = new SessionFolders(foldersRoot({ home }), null).home(c);
    await files.write('1mb.bin', randomBytes(1024 * 1024));
    rows.push(await measure(name, 'read 1 MB (file layer)', READ_N, () => files.read('1mb.bin', 2 * 1024 * 1024)));
    if (firstUse) {
      const fresh: string[] = [];
      try {
        rows.push(await measure(name, 'first use (create+start+exec)', FIRST_N, async () => {
          const f = user('first');
          fresh.push(f);
          await (await runner.acquire(f)).exec('true');
        }));
      } finally {
        for (const f of fresh) await runner.reset(f);
      }
    }
  } finally {
    await runner.reset(u).catch(() => {});
    await runner.close();
  }
  return rows;
}

const home = mkdtempSync(join(tmpdir(), 'agentsvc-bench-'));
try {
  const rows = [
    ...(await bench('local', createLocalRunner({ home }), false)),
    ...(await bench('local (unconfined)', createLocalRunner({ home, bwrapPath: null }), false)),
    ...(await bench('docker', createDockerRunner({ home, image: IMAGE, apiTimeoutMs: 10_000 }), true)),
  ];
  const cols = ['runner', 'what', 'n', 'p50 ms', 'p99 ms'];
  const lines = rows.map((r) => [r.runner, r.what, String(r.n), r.p50.toFixed(1), r.p99.toFixed(1)]);
  const widths = cols.map((c, i) => Math.max(c.length, ...lines.map((l) => l[i].length)));
  const fmt = (l: string[]) => l.map((v, i) => (i >= 2 ? v.padStart(widths[i]) : v.padEnd(widths[i]))).join('  ');
  console.log(fmt(cols));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(fmt(l));
} finally {
  rmSync(home, { recursive: true, force: true });
}
