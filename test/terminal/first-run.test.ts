import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startFakeModel } from '../fixtures/fake-model.js';
import { buildWithModel } from '../helpers/chat.js';
import { kill as stopUp, startUp, type UpProcess } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { waitFor as waitUntil } from '../helpers/wait.js';
import { artifact, cli, tmuxMissing, startCli, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/**
 * A first run explains itself (issue 31): `agentsvc chat` checks, before its prompt, that the
 * service answers (else the steps to start it, exit 1) and that its model endpoint does (else
 * what is wrong: no key, refused, unreachable, and how to fix it, on one screen). A run that fails
 * on the model says the same after its error, with -m on stderr. Screens in test/artifacts/terminal/.
 */

const { tmux, waitFor, kill } = tmuxServer(`agentsvc-first-${process.pid}`);
t.teardown(kill);

const start = (name: string, env: Record<string, string>, args: string[]) => startCli(tmux, name, env, args);

/** A port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

t.test('the service is down: the next steps, exit 1, no prompt', { skip: noTmux }, async (t) => {
  const port = await closedPort();
  start('down', { AGENTSVC_HOME: '/tmp/agentsvc-first-run-nowhere', AGENTSVC_URL: `http://127.0.0.1:${port}` }, ['chat']);
  const text = await waitFor('down', /\[exit \d+\]/);
  artifact('first-run-down.txt', text);
  t.match(text, new RegExp(`^agentsvc is not running at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED; address from AGENTSVC_URL\\)\\n\\nNext steps\\n`));
  t.match(text, /1\. Start the service in another terminal: +agentsvc up\n.*creates \/tmp\/agentsvc-first-run-nowhere/);
  t.match(text, /OPENAI_BASE_URL=https:\/\/api\.openai\.com\/v1 +OPENAI_API_KEY=sk-… +AGENTSVC_MODEL=/);
  t.match(text, /3\. Then chat: +agentsvc chat +check everything: +agentsvc doctor/);
  t.match(text, /\[exit 1\]$/);
  t.notMatch(text, /─{20}/, 'no editor: nothing could be sent');
  t.ok(text.split('\n').length <= 14, 'one screen');
});

t.test('no model key: said before the prompt and after the failed run; -m says it on stderr', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t, { OPENAI_API_KEY: '' });
  model.apiKey = 'sk-the-real-one';
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  start('nokey', env, ['chat']);
  let text = await waitFor('nokey', /new session \(made by your first message\)[^\n]*\n─+\n\n─+$/);
  artifact('first-run-no-key.txt', text);
  const base = model.baseUrl.replace(/[/.]/g, '\\$&');
  t.match(
    text,
    new RegExp(
      `^The model endpoint is not ready: answers will fail until it is\\.\\n {2}${base} answered 401: no API key is set \\(OPENAI_API_KEY is empty\\)\\n\\nTo fix it\\n {2}set OPENAI_API_KEY \\(environment or AGENTSVC_HOME/config\\.json\\), then restart \`agentsvc up\`\\n`,
    ),
  );
  t.match(text, new RegExp(`for example in ${app.home.replace(/[/.]/g, '\\$&')}/config\\.json:\\n +\\{"OPENAI_BASE_URL"`));

  // The first message fails on the model: its error, then the same finding.
  tmux('send-keys', '-t', 'nokey', 'hello', 'Enter');
  text = await waitFor('nokey', /› hello[\s\S]*error: [^\n]*401[\s\S]*\[chat failed[^\n]*\]\nThe model endpoint is not ready[\s\S]*checks it again\.\n─+\n\n─+$/);
  artifact('first-run-no-key-failed.txt', text);
  tmux('send-keys', '-t', 'nokey', '/exit', 'Enter');

  const one = await cli(['chat', '-m', 'hello'], env);
  t.equal(one.code, 1, 'the run failed');
  t.match(one.stdout, /error: [^\n]*401/, 'the error, where the answer would be');
  t.match(one.stderr, /answered 401: no API key is set \(OPENAI_API_KEY is empty\)\n\nTo fix it\n {2}set OPENAI_API_KEY/, '-m: the finding on stderr');
  t.notMatch(one.stdout, /To fix it/, 'stdout keeps the answer alone');
});

t.test('a refused key and an unreachable endpoint are told apart; a working one says nothing', { skip: noTmux }, async (t) => {
  const { app, model } = await buildWithModel(t, { OPENAI_API_KEY: 'sk-wrong' });
  model.apiKey = 'sk-the-real-one';
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  start('wrong', env, ['chat']);
  const text = await waitFor('wrong', /new session \(made by your first message\)/);
  t.match(text, /answered 401: it refused the API key\n\nTo fix it\n {2}check OPENAI_API_KEY/);
  tmux('send-keys', '-t', 'wrong', '/exit', 'Enter');

  const port = await closedPort();
  const { app: app2 } = await buildWithModel(t, { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: '' });
  start('gone', { AGENTSVC_HOME: app2.home, AGENTSVC_URL: app2.url }, ['chat']);
  const gone = await waitFor('gone', /new session \(made by your first message\)/);
  artifact('first-run-unreachable.txt', gone);
  t.match(
    gone,
    new RegExp(`http://127\\.0\\.0\\.1:${port}/v1 unreachable: ECONNREFUSED \\(and OPENAI_API_KEY is empty\\)\\n\\nTo fix it\\n {2}check the network, or set OPENAI_BASE_URL`),
  );
  tmux('send-keys', '-t', 'gone', '/exit', 'Enter');

  model.apiKey = undefined;
  start('fine', env, ['chat']);
  const fine = await waitFor('fine', /new session \(made by your first message\)[^\n]*\n─+\n\n─+$/);
  t.match(fine, /^new session/, 'a working endpoint: straight to the prompt');
  tmux('send-keys', '-t', 'fine', '/exit', 'Enter');
});

t.test('`up` with no model configured says so, then the next steps; a refused key is named', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-first-up-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const untilSteps = async (up: UpProcess) => {
    t.teardown(() => stopUp(up.child, 'SIGINT'));
    await waitUntil(() => /chat here +agentsvc chat/.test(up.out()), { timeoutMs: 30_000, what: 'the next steps' });
    return up.out();
  };
  const noModel = { AGENTSVC_HOME: home, OPENAI_BASE_URL: '', OPENAI_API_KEY: '', DATABASE_URL: await freshDatabaseUrl(t) };
  const up = await startUp(noModel);
  const out = await untilSteps(up);
  artifact('first-run-up.txt', out);
  const after = out.slice(out.indexOf('agentsvc listening on'));
  const url = up.url.replace('0.0.0.0', '127.0.0.1');
  t.match(
    after,
    new RegExp(
      '^agentsvc listening on \\S+\\n\\nThe model endpoint is not ready: answers will fail until it is\\.\\n' +
        ' {2}no model is configured: OPENAI_API_KEY is empty and OPENAI_BASE_URL is its default\\s+\\(https://api\\.openai\\.com/v1\\)\\n\\nTo fix it\\n {2}set OPENAI_BASE_URL',
    ),
  );
  t.match(after, new RegExp(`for example in ${home.replace(/[/.]/g, '\\$&')}/config\\.json:`));
  t.match(
    after,
    new RegExp(`\\n\\nNext steps\\n {2}web console +${url.replace(/[/.]/g, '\\$&')}/ .*\\n {2}API docs +${url.replace(/[/.]/g, '\\$&')}/api/docs\\n {2}chat here +agentsvc chat`),
  );
  t.notOk(out.includes('\u001b['), 'no colours when piped');
  // A first start on a fresh home has nothing to warn about: what happened is said plainly.
  t.match(out, /\nagentsvc: plugin skills: installed shipped skills: /, 'shipped skills: a plain line');
  t.notMatch(out, /warning|Deprecation/i, 'no warning on a fresh home, no deprecation from a library');
  t.equal((await fetch(`${url}/api/docs`)).status, 200, 'the docs URL it names answers');
  await stopUp(up.child, 'SIGINT');

  // A model endpoint that refuses the key: its URL, the status and the fix; the service still starts.
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.apiKey = 'sk-the-real-one';
  const up401 = await startUp({ ...noModel, OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'sk-wrong' });
  const refused = await untilSteps(up401);
  await stopUp(up401.child, 'SIGINT');
  artifact('first-run-up-401.txt', refused);
  t.match(
    refused,
    new RegExp(
      `listening on \\S+\\n\\nThe model endpoint is not ready[^\\n]*\\n {2}${model.baseUrl.replace(/[/.]/g, '\\$&')} answered 401: it refused the API key\\n\\nTo fix it\\n {2}check OPENAI_API_KEY`,
    ),
  );

  // A working endpoint: the next steps alone.
  model.apiKey = undefined;
  const fine = await untilSteps(await startUp({ ...noModel, OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: 'sk-any' }));
  t.match(fine.slice(fine.indexOf('listening')), /^listening on \S+\n\nNext steps\n/);
});
