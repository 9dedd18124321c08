/**
 * The alert rules shipped with the Prometheus example (deploy/prometheus, docs/monitoring.md):
 * promtool accepts them and the example config that loads them, their unit tests pass, and every
 * metric they name is one a running service exposes (a renamed metric would silence an alert).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { missingCommand, needs } from '../helpers/needs.js';

const noPromtool = needs(t, 'the alert rules checked by promtool', missingCommand('promtool', 'prometheus'));


const promtool = (...args: string[]) => spawnSync('promtool', args, { cwd: 'deploy/prometheus', encoding: 'utf8' });

t.test('promtool checks the rules and runs their unit tests', { skip: noPromtool }, async (t) => {
  const check = promtool('check', 'rules', 'alerts.yml');
  t.equal(check.status, 0, check.stdout + check.stderr);
  t.match(check.stdout, /SUCCESS: 12 rules found/);
  const config = promtool('check', 'config', '--syntax-only', 'prometheus.yml');
  t.equal(config.status, 0, `the example config loads the rules: ${config.stdout}${config.stderr}`);
  const tests = promtool('test', 'rules', 'alerts.test.yml');
  t.equal(tests.status, 0, tests.stdout + tests.stderr);
  t.match(tests.stdout, /SUCCESS/);
});

t.test('a rule that would fire on healthy figures fails its unit test', { skip: noPromtool }, async (t) => {
  // The unit tests can fail: the same tests against rules whose thresholds are inverted.
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'rules-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'alerts.yml'), readFileSync('deploy/prometheus/alerts.yml', 'utf8').replace('> 0.2', '< 0.2'));
  writeFileSync(join(dir, 'alerts.test.yml'), readFileSync('deploy/prometheus/alerts.test.yml', 'utf8'));
  const r = spawnSync('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd: dir, encoding: 'utf8' });
  t.not(r.status, 0, 'promtool reports the broken rule');
  t.match(r.stdout + r.stderr, /AgentsvcRunFailureRate/);
});

t.test('every metric the rules name is exposed by the service', async (t) => {
  const rules = readFileSync('deploy/prometheus/alerts.yml', 'utf8');
  const named = new Set([...rules.matchAll(/\b(agentsvc_[a-z0-9_]+)/g)].map((m) => m[1]));
  const { app } = await buildWithModel(t);
  const text = await (await app.api('/metrics', { key: app.adminKey })).text();
  const exposed = new Set([...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]));
  t.ok(named.size >= 8, `${named.size} metrics named by the rules`);
  for (const name of named) t.ok(exposed.has(name), `${name} is exposed`);
});
