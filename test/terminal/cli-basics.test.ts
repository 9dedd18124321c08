import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { kill, startUp } from '../helpers/cli.js';
import { cli } from './helpers.js';

/** Help texts, flags every command takes, and the one `up` a home may have. */

t.test('topic help describes the topics; keys create needs --name', async (t) => {
  const help = await cli(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /keys\s+API keys: create, list, rename, delete/);
  t.match(help.stdout, /sessions\s+Your sessions on the running service: list, show, delete/);
  t.notMatch(help.stdout, /keys\s+Create an API key/);
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-keys-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const noName = await cli(['keys', 'create', '--home', home]);
  t.equal(noName.code, 2, 'a usage error');
  t.match(noName.stderr, /Missing required flag name/);
  t.notMatch(noName.stdout, /sk-/, 'no key was made');
});

t.test('-v prints the version, help takes a topic, a typo names the nearest command', async (t) => {
  const version = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')).version;
  for (const flag of ['-v', '--version']) {
    const r = await cli([flag]);
    t.equal(r.code, 0, flag);
    t.match(r.stdout, new RegExp(`^agentsvc/${version.replaceAll('.', '\\.')} `), flag);
  }
  const topic = await cli(['help', 'sessions']);
  t.equal(topic.code, 0, topic.stderr);
  t.match(topic.stdout, /sessions list\s+List your sessions/);
  const typo = await cli(['sesions', 'list']);
  t.equal(typo.code, 127);
  t.match(typo.stderr.replace(/\s*›\s*/g, ' '), /`sesions list` is not an agentsvc command\. Did you mean `agentsvc sessions list`\?/);
});

t.test('chat --config finds the service the config file describes', async (t) => {
  const { app, model } = await buildWithModel(t);
  const port = new URL(app.url).port;
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-cfg-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A home without run/url: the URL comes from the config's host and port, the key from the env.
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ AGENTSVC_HOME: join(dir, 'home'), AGENTSVC_HOST: '127.0.0.1', AGENTSVC_PORT: Number(port) }));
  model.script({ text: ['configured.'] });
  const r = await cli(['chat', '--config', config, '-m', 'hi'], { AGENTSVC_KEY: app.adminKey });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'configured.\n');
  writeFileSync(config, '{ not json');
  const bad = await cli(['sessions', 'list', '--config', config], { AGENTSVC_KEY: app.adminKey });
  t.equal(bad.code, 1);
  t.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
  t.match(bad.stderr, /^agentsvc: .*config/);
});

t.test('a second up on a served home refuses with one line and leaves run/url alone', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-twice-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const first = await startUp({ AGENTSVC_HOME: home });
  t.teardown(() => kill(first.child, 'SIGINT'));
  const recorded = readFileSync(join(home, 'run', 'url'), 'utf8');
  const second = await cli(['up', '--port', '0', '--home', home], {}, { timeoutMs: 60_000 });
  t.equal(second.code, 1);
  t.equal(second.stderr, `agentsvc: ${home} is locked by agentsvc up (pid ${first.child.pid}, serving ${first.url}); stop that \`agentsvc up\` first, or pass another --home\n`);
  t.notMatch(second.stdout, /listening/);
  t.equal(readFileSync(join(home, 'run', 'url'), 'utf8'), recorded, 'run/url is the running one');
  t.equal((await fetch(`${first.url}/api/health`)).status, 200, 'the first is still serving');

  // Defect 10: the key in admin.key is deleted only with --force, with the way back; doctor says it.
  const keys = JSON.parse((await cli(['keys', 'list', '--json', '--home', home])).stdout) as { id: string; name: string }[];
  const adminKey = keys.find((k) => k.name === 'admin')!.id;
  const listed = (await cli(['keys', 'list', '--home', home])).stdout;
  t.match(listed, new RegExp(`^ID +KEY +CREATED \\(UTC\\) +LAST USED \\(UTC\\) +NAME\n${adminKey} +\\S+ +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d +(never|\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d) +admin\n$`), 'keys list: a table under a header');
  const refused = await cli(['keys', 'delete', adminKey, '--home', home]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, new RegExp(`^agentsvc: ${adminKey} is the key in ${home}/admin.key, which chat, sessions and doctor use; pass --force`));
  t.notMatch((await cli(['doctor', '--home', home])).stdout, /was refused/, 'not deleted: doctor still gets in');
  const forced = await cli(['keys', 'delete', adminKey, '--force', '--yes', '--home', home]);
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stderr, /warning: .*admin\.key now holds a deleted key; make another with: agentsvc keys create --name cli/);
  const doctor = await cli(['doctor', '--home', home]);
  t.equal(doctor.code, 1);
  t.match(doctor.stdout, /key +the key from .*admin\.key was refused \(401/);
  t.match(doctor.stdout, /fix: make another with: agentsvc keys create --name cli \| head -1 > .*admin\.key/);
});
