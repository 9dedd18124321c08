/**
 * The service log (CONTRACT 17): JSON lines rotated by size with 5 files kept, and `agentsvc logs`
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

  // -f prints lines written after it started, including after a rotation.
  const follow = spawn(process.execPath, [BIN, 'logs', '-f', '--session', marker], { env: { ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => follow.kill('SIGKILL'));
  let out = '';
  follow.stdout.on('data', (d) => (out += d));
  const seen = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not printed: ${re}; got ${out}`)), 15_000);
      const check = () => {
        if (re.test(out)) {
          clearTimeout(timer);
          resolve();
        } else setTimeout(check, 50);
      };
      check();
    });
  await new Promise((r) => setTimeout(r, 500)); // let it read the existing lines and start polling
  appendFileSync(join(logs, 'agentsvc.log'), `${JSON.stringify({ level: 40, time: Date.now(), msg: 'run failed', session_id: marker, code: 'MODEL_ERROR' })}\n`);
  appendFileSync(join(logs, 'agentsvc.log'), `${JSON.stringify({ level: 40, time: Date.now(), msg: 'someone else', session_id: 'sess_other' })}\n`);
  await seen(/WARN {2}run failed .*code=MODEL_ERROR/);
  t.notMatch(out, /someone else/, '--session keeps to that session');
  follow.kill('SIGINT');
  t.ok(existsSync(join(logs, 'agentsvc.log')));
});
