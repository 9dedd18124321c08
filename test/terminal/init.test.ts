import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startFakeModel } from '../fixtures/fake-model.js';
import { mergeModelSettings } from '../../src/cli/terminal/endpoint.js';
import { artifact, cli, hasStack, tmuxMissing, startCli, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/**
 * `agentsvc init` (docs/cli.md, "init"): on a terminal it asks for the endpoint, the key (masked)
 * and the model (from GET /models), checks them with a chat completion against the fake model
 * server, writes config.json and runs doctor; with flags (no terminal, or --yes) it asks nothing.
 * Nothing is written when a check fails, and an existing file changes only when confirmed.
 */

const home = () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-init-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
/** A port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}
const CLOSED = await closedPort();
/** No service answers here: doctor runs its local checks, never another test's service. */
const NO_SERVICE = { AGENTSVC_URL: `http://127.0.0.1:${CLOSED}`, OPENAI_API_KEY: '', OPENAI_BASE_URL: '', AGENTSVC_MODEL: '', AGENTSVC_MODELS: '' };

t.test('on a terminal: preset list, URL, masked key asked again after a 401, model picked from the list, written, doctor', { skip: noTmux }, async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.apiKey = 'sk-right-key';
  model.fallback = { text: ['OK'] };
  const dir = home();
  const { tmux, waitFor, kill } = tmuxServer(`agentsvc-init-${process.pid}`);
  t.teardown(kill);
  startCli(tmux, 'init', NO_SERVICE, ['init', '--home', dir], { columns: 110, rows: 45 });

  let screen = await waitFor('init', /\? Which model endpoint\?\n→ OpenAI +api\.openai\.com, needs an API key\n {2}Ollama .*\n {2}vLLM .*\n {2}LiteLLM .*\n {2}Other OpenAI-compatible URL .*\n {2}↑↓ to move, Enter to choose/);
  t.match(screen, /^agentsvc init · the model endpoint agentsvc calls, written to .*config\.json/);
  // ↑ from the first entry wraps to the last: the custom URL.
  tmux('send-keys', '-t', 'init', 'Up', 'Enter');
  await waitFor('init', /✔ Which model endpoint\? Other OpenAI-compatible URL\n\? Base URL .*\n>$/);
  tmux('send-keys', '-t', 'init', 'not a url', 'Enter');
  await waitFor('init', /an http:\/\/ or https:\/\/ URL, please/);
  tmux('send-keys', '-t', 'init', 'C-u', model.baseUrl, 'Enter');
  await waitFor('init', new RegExp(`✔ Base URL .* ${model.baseUrl.replace(/[/.]/g, '\\$&')}\\n\\? API key \\(Enter for none\\)\\n>$`));
  tmux('send-keys', '-t', 'init', 'sk-wrong');
  await waitFor('init', /\? API key \(Enter for none\)\n> •{8}$/);
  tmux('send-keys', '-t', 'init', 'Enter');
  screen = await waitFor('init', /✘ .* answered 401: it refused the API key\n\? API key \(Enter for none\)\n>$/);
  tmux('send-keys', '-t', 'init', 'sk-right-key', 'Enter');
  screen = await waitFor('init', /✔ .* answers: 1 model\n\? Default model\n→ fake-model\n {2}↑↓ to move, Enter to choose \(or type a name of your own\)/);
  tmux('send-keys', '-t', 'init', 'Enter');
  screen = await waitFor('init', /\[exit \d+\]/, 90_000);
  artifact('init-interactive.txt', screen);
  t.match(screen, /✔ Default model fake-model\n✔ model fake-model answered "OK" in \d+ (ms|s)/);
  t.match(screen, /✔ wrote .*config\.json \(mode 0600\)\n {2}OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/v1 {2}AGENTSVC_MODEL=fake-model\n {2}key: OPENAI_API_KEY \(the key you typed\)\n/);
  t.match(screen, /\nagentsvc doctor\n/, 'doctor ran');
  t.match(screen, /config +settings valid \(.*config\.json\)/, 'doctor read the new file');
  t.match(screen, /\[exit 0\]/);
  t.notMatch(screen, /sk-right-key|sk-wrong/, 'no key on the screen');
  const file = join(dir, 'config.json');
  t.same(readJson(file), { OPENAI_BASE_URL: model.baseUrl, AGENTSVC_MODEL: 'fake-model', OPENAI_API_KEY: 'sk-right-key' });
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.equal(model.requests.at(-1).model, 'fake-model', 'the check was a chat completion with the chosen model');

  // Again on the same home: the existing file is left alone unless the update is confirmed.
  const before = readFileSync(file, 'utf8');
  startCli(tmux, 'again', NO_SERVICE, ['init', '--home', dir], { columns: 110, rows: 20 });
  await waitFor('again', /\? config\.json exists\. Update its model settings\? \(its other settings are kept\)\n→ Yes, update them\n {2}No, leave the file as it is/);
  tmux('send-keys', '-t', 'again', 'Down', 'Enter');
  screen = await waitFor('again', /\[exit \d+\]/);
  t.match(screen, /No, leave the file as it is\n(\n)*nothing written\n\[exit 1\]/);
  t.equal(readFileSync(file, 'utf8'), before, 'unchanged');
});

t.test('with flags: written without questions; an existing file needs --yes; a failed check writes nothing', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.fallback = { text: ['OK'] };
  const dir = home();
  const file = join(dir, 'config.json');

  const first = await cli(['init', '--base-url', `${model.baseUrl}/`, '--model', 'fake-model', '--home', dir, '--no-doctor'], NO_SERVICE);
  t.equal(first.code, 0, first.stderr);
  t.equal(first.stderr, '');
  t.match(first.stdout, `${model.baseUrl} offers 1 model\n✔ model fake-model answered "OK" in `);
  t.match(first.stdout, `✔ wrote ${file} (mode 0600)\n  OPENAI_BASE_URL=${model.baseUrl}  AGENTSVC_MODEL=fake-model\n  key: no API key\nnext: agentsvc up`);
  t.same(readJson(file), { OPENAI_BASE_URL: model.baseUrl, AGENTSVC_MODEL: 'fake-model' }, 'the URL without its trailing slash');

  const refused = await cli(['init', '--base-url', model.baseUrl, '--model', 'fake-model', '--home', dir], NO_SERVICE);
  t.equal(refused.code, 1);
  t.equal(refused.stderr, `agentsvc: ${file} exists: pass --yes to update its model settings (its other settings are kept)\n`);

  // --yes updates it: the other settings stay, the key is named by its variable, doctor runs.
  writeFileSync(file, JSON.stringify({ ...readJson(file), AGENTSVC_LOG_LEVEL: 'debug', OPENAI_API_KEY: 'sk-old' }));
  model.apiKey = 'sk-from-env';
  const updated = await cli(['init', '--preset', 'custom', '--base-url', model.baseUrl, '--api-key-env', 'MY_MODEL_KEY', '--yes', '--home', dir], { ...NO_SERVICE, MY_MODEL_KEY: 'sk-from-env' });
  t.equal(updated.code, 0, updated.stderr);
  t.same(readJson(file), {
    AGENTSVC_LOG_LEVEL: 'debug',
    OPENAI_BASE_URL: model.baseUrl,
    AGENTSVC_MODEL: 'fake-model',
    models: [{ id: 'fake-model', base_url: model.baseUrl, api_key_env: 'MY_MODEL_KEY' }],
  });
  t.match(updated.stdout, 'the key from $MY_MODEL_KEY');
  t.match(updated.stdout, /\nagentsvc doctor\n/);
  t.match(updated.stdout, new RegExp(`config +settings valid \\(${file.replace(/[/.]/g, '\\$&')}\\)`), 'the written file loads');
  t.notMatch(updated.stdout + updated.stderr, /sk-from-env/);

  // Each failure: one line, exit 1, no stack, the file untouched.
  const kept = readFileSync(file, 'utf8');
  model.script({ status: 400 });
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['no endpoint named', ['--yes'], {}, /^agentsvc: say which endpoint: --preset .* or --base-url URL/],
    ['variable not set', ['--preset', 'vllm', '--api-key-env', 'NOT_SET_HERE', '--yes'], {}, /^agentsvc: --api-key-env NOT_SET_HERE: that variable is not set here/],
    ['not a variable name', ['--preset', 'vllm', '--api-key-env', 'a-b', '--yes'], {}, /^agentsvc: --api-key-env must name an environment variable/],
    ['not a URL', ['--base-url', 'ftp://x', '--yes'], {}, /^agentsvc: --base-url must be an http\(s\) URL/],
    ['key refused', ['--base-url', model.baseUrl, '--api-key-env', 'K', '--yes'], { K: 'sk-wrong' }, /answered 401: it refused the API key; nothing written$/],
    ['chat fails', ['--base-url', model.baseUrl, '--model', 'fake-model', '--api-key-env', 'K', '--yes'], { K: 'sk-from-env' }, /POST .*\/chat\/completions \(model fake-model\) answered 400: fake error 400; nothing written$/],
    ['OpenAI without a key', ['--preset', 'openai', '--yes'], {}, /^agentsvc: OpenAI needs an API key: put it in an environment variable and pass --api-key-env NAME/],
    ['unreachable', ['--base-url', `http://127.0.0.1:${CLOSED}/v1`, '--model', 'm', '--yes'], {}, new RegExp(`http://127\\.0\\.0\\.1:${CLOSED}/v1 unreachable: ECONNREFUSED; nothing written$`)],
  ];
  for (const [what, args, env, re] of cases) {
    const r = await cli(['init', ...args, '--home', dir, '--no-doctor'], { ...NO_SERVICE, ...env });
    t.equal(r.code, 1, what);
    t.equal(r.stderr.trim().split('\n').length, 1, `${what}: one line: ${r.stderr}`);
    t.match(r.stderr.trim(), re, what);
    t.notOk(hasStack(r.stderr), `${what}: no stack`);
    t.equal(readFileSync(file, 'utf8'), kept, `${what}: nothing written`);
  }
  t.notOk(existsSync(`${file}.tmp`));
});

t.test('the merge keeps what init does not own', async (t) => {
  const existing = { AGENTSVC_POLICY: { default: 'ask' }, OPENAI_API_KEY: 'sk-old', models: [{ id: 'other', base_url: 'http://x/v1' }, { id: 'm', base_url: 'http://old/v1' }] };
  t.same(mergeModelSettings(existing, { baseUrl: 'http://new/v1', model: 'm', apiKey: 'sk-new' }), {
    AGENTSVC_POLICY: { default: 'ask' },
    models: [{ id: 'other', base_url: 'http://x/v1' }],
    OPENAI_BASE_URL: 'http://new/v1',
    AGENTSVC_MODEL: 'm',
    OPENAI_API_KEY: 'sk-new',
  });
  t.same(mergeModelSettings({ models: [{ id: 'm' }] }, { baseUrl: 'http://new/v1', model: 'm', apiKey: '' }), { OPENAI_BASE_URL: 'http://new/v1', AGENTSVC_MODEL: 'm' }, 'a list left empty goes');
  t.same(mergeModelSettings(null, { baseUrl: 'http://new/v1', model: 'm', apiKey: 'sk-env', keyFromEnv: true }), { OPENAI_BASE_URL: 'http://new/v1', AGENTSVC_MODEL: 'm' }, 'a key from OPENAI_API_KEY is not written');
});
