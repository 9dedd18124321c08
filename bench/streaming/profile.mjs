#!/usr/bin/env node
// Summarise a .cpuprofile (node --cpu-prof): self time by function and by package/file, and the
// inclusive time of functions whose location matches a filter. Each sample counts for at most
// 2 ms: on a loaded machine the process is descheduled between samples, and the next sample would
// otherwise take that whole wait (one of 1.1 s was seen), wherever the code happened to be.
// Usage: node bench/streaming/profile.mjs FILE.cpuprofile [top=25] [filter=/src/]
import { readFileSync } from 'node:fs';

const [file, topArg, filter] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map();
const dts = prof.timeDeltas;
const CAP = 2000;
for (let i = 0; i < prof.samples.length; i++) self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + Math.min(dts[i] ?? 0, CAP));
const total = [...self.values()].reduce((a, b) => a + b, 0);
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
for (const [id, t] of self) {
  const n = byId.get(id);
  add(fn, label(n.callFrame), t);
  add(pkg, where(n.callFrame), t);
  // Inclusive: each distinct frame on the stack once.
  const seen = new Set();
  for (let p = id; p !== undefined; p = parent.get(p)) {
    const l = label(byId.get(p).callFrame);
    if (seen.has(l)) continue;
    seen.add(l);
    add(incl, l, t);
  }
}
const show = (title, m) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${(v / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
show('self time by package / file', pkg);
show('self time by function', fn);
show(`inclusive time${filter ? ` (${filter})` : ''}`, new Map([...incl].filter(([k]) => !filter || k.includes(filter))));
