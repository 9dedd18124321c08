/**
 * The service log (docs/operations.md): JSON lines rotated by size with 5 files kept, and `agentsvc logs`
 * printing them readably, filtered by level and session, and following new lines.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/platform/config/index.js';
import { startService } from '../../src/service.js';
import { BIN, cleanEnv } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { cli } from './helpers.js';

t.test('the log rotates by size, keeps 5 files, and `agentsvc logs` reads them back', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-logs-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const config = loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_PORT: '0', DATABASE_URL: await freshDatabaseUrl(t), AGENTSVC_LOG_MAX_BYTES: '8192', OPENAI_API_KEY: 'x' } });
  const service = await startService(config);
  const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  // Every request is an info line (about 300 bytes): 400 of them rotate the 8 KiB file many times.
  for (let i = 0; i < 400; i++) await fetch(`${service.url}/api/auth/me`, { headers: { authorization: `Bearer ${key}` } });
  const marker = (await (await fetch(`${service.url}/api/sessions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{}' })).json()).session_id;
  await service.close();

  const logs = join(home, 'logs');
  const files = readdirSync(logs).filter((f) => f.startsWith('agentsvc.log')).sort();
  t.same(files, ['agentsvc.log', 'agentsvc.log.1', 'agentsvc.log.2', 'agentsvc.log.3', 'agentsvc.log.4', 'agentsvc.log.5'], 'the current file and 5 rotated ones');
  for (const f of files) t.ok(readFileSync(join(logs, f)).length <= 8192 + 4096, `${f} near the size bound`);

  const env = { ...cleanEnv(), AGENTSVC_HOME: home } as Record<string, string>;
  const all = await cli(['logs'], env);
  t.equal(all.code, 0, all.stderr);
  const lines = all.stdout.trim().split('\n');
  t.ok(lines.length > 20, `${lines.length} lines printed`);
  t.match(lines[0], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (INFO |WARN |ERROR) /, 'readable: time, level, message');
  t.notMatch(all.stdout, /^\{"level"/m, 'not the raw JSON');
  const times = lines.map((l) => l.slice(0, 23));
  t.same(times, [...times].sort(), 'oldest first across the rotated files');

  const warn = await cli(['logs', '--level', 'warn'], env);
  t.notMatch(warn.stdout, / INFO /, '--level warn leaves out info lines');
  const json = await cli(['logs', '--json', '--level', 'info'], env);
  t.ok(json.stdout.trim().split('\n').every((l) => typeof JSON.parse(l).level === 'number'), '--json prints the stored lines');

  // One line per request, with whole milliseconds (fastify's own two lines per request are off).
  const stored = json.stdout.trim().split('\n').map((l) => JSON.parse(l));
  const requests = stored.filter((l) => l.msg === 'request');
  t.ok(requests.length > 20, `${requests.length} request lines`);
  t.same(Object.keys(requests[0]).filter((k) => ['method', 'url', 'status', 'ms'].includes(k)).sort(), ['method', 'ms', 'status', 'url']);
  t.ok(requests.every((l) => Number.isInteger(l.ms)), 'ms is a whole number');
  t.equal(stored.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed').length, 0, "no fastify request lines");

  // -n: the last N lines that pass the filters, read from the end across the rotated files.
  const last = await cli(['logs', '-n', '3', '--json'], env);
  t.same(last.stdout.trim().split('\n'), json.stdout.trim().split('\n').slice(-3), 'the last 3 lines');
  const many = await cli(['logs', '-n', String(lines.length + 1000)], env);
  t.equal(many.stdout, all.stdout, 'more than there are: all of them, oldest first');
  t.equal((await cli(['logs', '-n', '0'], env)).stdout, '');

  // -f prints the last -n lines that pass the filters at once, then lines written after it started,
  // including after a rotation.
  appendFileSync(join(logs, 'agentsvc.log'), `${JSON.stringify({ level: 30, time: Date.now(), msg: 'before follow', session_id: marker })}\n`);
  const follow = spawn(process.execPath, [BIN, 'logs', '-f', '-n', '1', '--session', marker], { env: { ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => follow.kill('SIGKILL'));
  let out = '';
  follow.stdout.on('data', (d) => (out += d));
  // Printed once it has read up to where the file ended, which is where following starts.
  await waitFor(() => /before follow/.test(out), { what: 'the last line at start' });
  t.equal(out.trim().split('\n').length, 1, '-n 1: one line');
  appendFileSync(join(logs, 'agentsvc.log'), `${JSON.stringify({ level: 40, time: Date.now(), msg: 'run failed', session_id: marker, code: 'MODEL_ERROR' })}\n`);
  appendFileSync(join(logs, 'agentsvc.log'), `${JSON.stringify({ level: 40, time: Date.now(), msg: 'someone else', session_id: 'sess_other' })}\n`);
  await waitFor(() => /WARN {2}run failed .*code=MODEL_ERROR/.test(out), { what: 'the new line' });
  t.notMatch(out, /someone else/, '--session keeps to that session');
  follow.kill('SIGINT');
  t.ok(existsSync(join(logs, 'agentsvc.log')));
});
