#!/usr/bin/env node
// `npm run test:unit`: the fast tier for the edit loop. The test files that start nothing (no
// service, database, Redis, sandbox, browser or child process), found by what they import, so a
// new file joins the tier by itself. The whole suite stays `npm test`.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

// tmuxServer/startCli: the terminal tests that drive the built CLI under tmux (a child process each).
// console/browser and identity/oidc: chromium, and the test OpenID provider with the service behind it.
const NEEDS_A_SERVICE = /helpers\/(app|chat|db|nodes|cli|chaos|socket|files)|startService|TEST_PG_URL|TEST_REDIS_URL|openDatabase|embedded|node:child_process|playwright|createRunner|runners\/|tmuxServer|startCli|console\/browser\.js'|\/oidc\.js'/;


function* testFiles(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* testFiles(p);
    else if (e.name.endsWith('.test.ts')) yield p;
  }
}

/** A file needs a service when it, or a test file it imports (outside test/helpers, which the pattern names), starts one. */
function needsService(file, seen = new Set()) {
  if (seen.has(file)) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  if (NEEDS_A_SERVICE.test(text)) return true;
  for (const [, rel] of text.matchAll(/from '(\.\.?\/[^']+)\.js'/g)) {
    const dep = join(dirname(file), `${rel}.ts`);
    if (dep.startsWith('test/') && !dep.startsWith('test/helpers/') && existsSync(dep) && needsService(dep, seen)) return true;
  }
  return false;
}

const files = [...testFiles('test')].filter((f) => !needsService(f)).sort();
console.log(`# fast tier: ${files.length} files`);
const tap = spawn(process.execPath, [join('node_modules', 'tap', 'dist', 'esm', 'run.mjs'), ...files], { stdio: 'inherit' });
tap.on('exit', (c, sig) => process.exit(c ?? (sig ? 1 : 0)));
