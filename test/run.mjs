#!/usr/bin/env node
// `npm test`: starts the real services the suite needs once per run (embedded PostgreSQL, Redis when
// installed), runs tap over the test files in parallel, stops everything it started.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';

const CI = process.env.CI === 'true';
const home = mkdtempSync(join(tmpdir(), 'agentsvc-test-'));
const stops = [];
let code = 1;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  if (process.env.TEST_REDIS_URL) return;
  if (spawnSync('sh', ['-c', 'command -v redis-server']).status !== 0) {
    const msg = 'redis-server not installed: Redis-backed tests will skip';
    if (CI) throw new Error(msg + ' (CI=true requires it)');
    console.log(`# ${msg}`);
    return;
  }
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  stops.push(() => new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); }));
  for (let i = 0; i < 50; i++) {
    if (spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  process.env.TEST_REDIS_URL = `redis://127.0.0.1:${port}`;
}

try {
  const { startEmbeddedPostgres } = await tsImport('../src/db/embedded.ts', import.meta.url);
  const pg = await startEmbeddedPostgres(home, { database: 'postgres' });
  stops.push(() => pg.stop());
  process.env.TEST_PG_URL = pg.url;
  await startRedis();
  const files = process.argv.slice(2);
  const tap = spawn(process.execPath, [join('node_modules', 'tap', 'dist', 'esm', 'run.mjs'), ...(files.length ? files : [])], {
    stdio: 'inherit',
    env: process.env,
  });
  code = await new Promise((resolve) => tap.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));
} catch (e) {
  console.error(`test setup failed: ${e.message}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  rmSync(home, { recursive: true, force: true });
}
process.exit(code);
