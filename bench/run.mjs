#!/usr/bin/env node
// `npm run bench`: every benchmark under bench/, one after another, printing figures.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = import.meta.dirname;
const only = process.argv.slice(2);
const files = readdirSync(dir).filter((f) => f !== 'run.mjs' && /\.(mjs|ts)$/.test(f) && (!only.length || only.some((o) => f.includes(o))));
let failed = 0;
for (const f of files.sort()) {
  console.log(`\n== ${f}`);
  const args = f.endsWith('.ts') ? ['--import', 'tsx', join(dir, f)] : [join(dir, f)];
  const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
