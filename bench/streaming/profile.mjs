#!/usr/bin/env node
// Summarise a .cpuprofile (node --cpu-prof, chatprof=) or a .heapprofile (heapprof=): self time or
// bytes allocated by function and by package/file, and the inclusive figure of functions whose
// location matches a filter. In a CPU profile each sample counts for at most 2 ms: on a loaded
// machine the process is descheduled between samples, and the next sample would otherwise take
// that whole wait (one of 1.1 s was seen), wherever the code happened to be.
// Usage: node bench/streaming/profile.mjs FILE.cpuprofile|FILE.heapprofile [top=25] [filter=/src/]
import { readFileSync } from 'node:fs';

const [file, topArg, filter] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const heap = !!prof.head;
/** [stack, value]: the stack leaf first; time in µs (CPU) or bytes (heap). */
const entries = [];
if (heap) {
  const walk = (n, stack) => {
    const here = [n.callFrame, ...stack];
    if (n.selfSize) entries.push([here, n.selfSize]);
    for (const c of n.children) walk(c, here);
  };
  walk(prof.head, []);
} else {
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  const dts = prof.timeDeltas;
  const CAP = 2000;
  for (let i = 0; i < prof.samples.length; i++) self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + Math.min(dts[i] ?? 0, CAP));
  for (const [id, t] of self) {
    const stack = [];
    for (let p = id; p !== undefined; p = parent.get(p)) stack.push(byId.get(p).callFrame);
    entries.push([stack, t]);
  }
}
const total = entries.reduce((a, [, v]) => a + v, 0);
const where = (cf) => {
  const u = cf.url.replace(/^file:\/\//, '');
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  return nm ? nm[1] : u.includes('/dist/src/') ? u.slice(u.indexOf('/dist/src/') + 1) : u || '(native)';
};
const label = (cf) => `${cf.functionName || '(anonymous)'} ${where(cf)}:${cf.lineNumber + 1}`;
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
const fn = new Map();
const pkg = new Map();
const incl = new Map();
for (const [stack, v] of entries) {
  add(fn, label(stack[0]), v);
  add(pkg, where(stack[0]), v);
  // Inclusive: each distinct frame on the stack once.
  const seen = new Set();
  for (const cf of stack) {
    const l = label(cf);
    if (seen.has(l)) continue;
    seen.add(l);
    add(incl, l, v);
  }
}
const amount = (v) => (heap ? `${(v / 1024).toFixed(0).padStart(7)} KiB` : `${(v / 1000).toFixed(0).padStart(7)} ms`);
const what = heap ? 'bytes allocated' : 'self time';
const show = (title, m) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${amount(v)}  ${k}`);
};
console.log(`${file}: ${heap ? `${(total / 1048576).toFixed(1)} MiB allocated (sampled)` : `${(total / 1e6).toFixed(1)} s sampled`}`);
show(`${what} by package / file`, pkg);
show(`${what} by function`, fn);
show(`inclusive ${heap ? 'bytes' : 'time'}${filter ? ` (${filter})` : ''}`, new Map([...incl].filter(([k]) => !filter || k.includes(filter))));
