#!/usr/bin/env node
// Time from `agentsvc up` to its listening line after `up` and its embedded PostgreSQL were both
// killed with SIGKILL (as the OOM killer would), i.e. crash recovery included.
// Usage: node bench/recovery.mjs [runs=3]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const runs = Number(process.argv[2] ?? 3);
const BIN = join(import.meta.dirname, '..', 'bin', 'run.js');
const home = mkdtempSync(join(tmpdir(), 'agentsvc-bench-'));
const env = { ...process.env, AGENTSVC_HOME: home };
delete env.DATABASE_URL;

async function start() {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, 'up', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      if (out.includes('agentsvc listening on')) resolve();
    });
    child.once('exit', (c) => reject(new Error(`up exited ${c}: ${out}`)));
  });
  return { child, ms: performance.now() - t0, out };
}

const exited = (child) => new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));
const times = [];
try {
  let run = await start(); // first start: initdb + migrations, not measured
  for (let i = 0; i < runs; i++) {
    const pgPid = Number(readFileSync(join(home, 'db', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    run.child.kill('SIGKILL');
    process.kill(pgPid, 'SIGKILL');
    await exited(run.child);
    run = await start();
    if (!run.out.includes('recovered from')) throw new Error(`no recovery line: ${run.out}`);
    times.push(run.ms);
  }
  run.child.kill('SIGTERM');
  await exited(run.child);
} finally {
  rmSync(home, { recursive: true, force: true });
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`recovery (${runs} runs, median):`);
console.log(`  SIGKILL of up + PostgreSQL, then up to listening: ${med(times).toFixed(0)} ms  [${times.map((x) => x.toFixed(0)).join(', ')}]`);
