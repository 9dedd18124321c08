#!/usr/bin/env node
// Time from `agentsvc up` to its listening line (first start with initdb, then a restart), and the
// idle RSS of the server process and of the embedded PostgreSQL. Usage: node bench/startup.mjs [runs]
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const runs = Number(process.argv[2] ?? 3);
const BIN = join(import.meta.dirname, '..', 'bin', 'run.js');

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

async function start(home) {
  const env = { ...process.env, AGENTSVC_HOME: home };
  delete env.DATABASE_URL;
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, 'up', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      if (out.includes('agentsvc listening on')) resolve();
    });
    child.once('exit', (c) => reject(new Error(`exited ${c}`)));
  });
  return { child, ms: performance.now() - t0 };
}

const stop = (child) => new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); });
const first = [], second = [], rss = [], pgRss = [];
for (let i = 0; i < runs; i++) {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-bench-'));
  const a = await start(home);
  first.push(a.ms);
  await stop(a.child);
  const b = await start(home);
  second.push(b.ms);
  await new Promise((r) => setTimeout(r, 3000)); // idle
  rss.push(rssKiB(b.child.pid));
  const pgPid = Number(readFileSync(join(home, 'db', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pgKids = execFileSync('pgrep', ['-P', String(pgPid)], { encoding: 'utf8' }).trim().split('\n').map(Number);
  pgRss.push([pgPid, ...pgKids].reduce((s, p) => { try { return s + rssKiB(p); } catch { return s; } }, 0));
  await stop(b.child);
  rmSync(home, { recursive: true, force: true });
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`startup (${runs} runs, median):`);
console.log(`  first start (initdb + migrations) to listening: ${med(first).toFixed(0)} ms  [${first.map((x) => x.toFixed(0)).join(', ')}]`);
console.log(`  second start to listening:                      ${med(second).toFixed(0)} ms  [${second.map((x) => x.toFixed(0)).join(', ')}]`);
console.log(`  idle RSS, server process:                       ${(med(rss) / 1024).toFixed(1)} MiB`);
console.log(`  idle RSS, embedded PostgreSQL (all processes):  ${(med(pgRss) / 1024).toFixed(1)} MiB (shared pages counted per process)`);
