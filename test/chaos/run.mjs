#!/usr/bin/env node
// `npm run chaos`: the chaos trial of issue 26 as one suite, run as real clients and a hostile
// environment would, then its figures in one table. Scenarios: back-to-back chats from 50 clients,
// a reconnect storm, kill -9 of the service (and of its database) mid-run with a seq check, the
// database's disk full (a tablespace on tmpfs) and the workspaces' (tmpfs), slow consumers
// (backpressure), two nodes with Redis down for 10 s, hostile bodies and events, model faults; then
// the memory check after 5,000 chats (bench/memory.ts). The tmpfs scenarios need root (CI), the
// two-node one redis-server; without them they say why they skip.
// Usage: node test/chaos/run.mjs [--no-memory] [FILTER...] (FILTER: part of a file name)
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const args = process.argv.slice(2);
const memory = !args.includes('--no-memory');
const filters = args.filter((a) => !a.startsWith('--'));
const files = [
  'test/chaos/back-to-back.test.ts',
  'test/chaos/reconnect-storm.test.ts',
  'test/chaos/seq-crash.test.ts',
  'test/chaos/crash.test.ts',
  'test/chaos/db-full.test.ts',
  'test/files/full-disk.test.ts',
  'test/chat/backpressure.test.ts',
  'test/scaleout/two-nodes.test.ts',
  'test/chaos/bad-input.test.ts',
  'test/chaos/body-guards.test.ts',
  'test/chaos/limits.test.ts',
].filter((f) => !filters.length || filters.some((x) => f.includes(x)));

/** Run a command, echoing its output; answers its exit code and what it printed. */
function run(cmd, argv) {
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      process.stdout.write(c);
    });
    child.on('exit', (code, sig) => resolve({ code: code ?? (sig ? 1 : 0), out }));
  });
}

// The TAP stream (not the summary reporter): the comments carry the figures.
const tests = files.length ? await run(process.execPath, ['test/run.mjs', '--reporter=tap', ...files]) : { code: 0, out: '' };
const figures = [];
let file = '';
for (const line of tests.out.split('\n')) {
  const sub = /^# Subtest: (test\/\S+)/.exec(line);
  if (sub) file = sub[1];
  const comment = /^\s*# (?!Subtest|time=|No coverage|\{)(.+)$/.exec(line);
  if (comment && file) figures.push([file.replace(/^test\//, ''), comment[1]]);
  const result = /^(not )?ok \d+ - (test\/\S+)/.exec(line);
  if (result) figures.push([result[2].replace(/^test\//, ''), result[1] ? 'FAILED' : 'passed']);
}
let mem = { code: 0, out: '' };
if (memory && !filters.length) mem = await run(process.execPath, ['--import', 'tsx', 'bench/memory.ts']);

console.log('\n== chaos figures');
const width = Math.max(...figures.map(([f]) => f.length), 10);
for (const [f, text] of figures) console.log(`${f.padEnd(width)}  ${text}`);
for (const line of mem.out.split('\n').filter((l) => /chats in|goal:/.test(l))) console.log(`${'bench/memory.ts'.padEnd(width)}  ${line}`);
process.exit(tests.code || mem.code ? 1 : 0);
