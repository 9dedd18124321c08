import t from 'tap';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { cli, dropProxy, hasStack } from './helpers.js';

/** `agentsvc chat -m` and `sessions *` against a real service, through the built CLI. */

const echoTool = {
  name: 'Echo',
  description: 'Echo the text back.',
  provider: 'builtin' as const,
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
  execute: async (args: { text: string }) => `echo: ${args.text}\nline 2\nline 3\nline 4\nline 5\nline 6`,
};

t.test('chat -m: streamed answer, compact tool call, exit 0; --json prints chat:end', async (t) => {
  const { app, model } = await buildWithModel(t);
  app.service.tools.register(echoTool);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  model.script(
    { reasoning: ['Let me think.'], text: ['Checking ', 'with echo.'], toolCalls: [{ name: 'Echo', args: { text: 'hello there' } }] },
    { text: ['All ', 'done: ', 'hello there.'] },
  );
  const r = await cli(['chat', '-m', 'say hello'], env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /agentsvc: session sess_\w+/, 'a new session is named on stderr');
  t.notOk(r.stdout.includes('\u001b['), 'no ANSI when stdout is a pipe');
  t.match(r.stdout, 'Let me think.', 'thinking is shown');
  t.match(r.stdout, 'Checking with echo.', 'text deltas joined as streamed');
  t.match(r.stdout, /● Echo\(hello there\)\n/, 'tool call: name and key argument on one line');
  t.match(r.stdout, /└ done( \d+ms)? · echo: hello there\n\s+line 2\n\s+… \+4 lines\n/, 'result folded to 2 lines piped');
  t.match(r.stdout, 'All done: hello there.');
  const sid = /session (sess_\w+)/.exec(r.stderr)![1];
  const stored = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.equal(stored.length, 3, 'the conversation was stored');

  // Continue the same session, --json: exactly the chat:end payload.
  model.script({ text: ['second answer'] });
  const j = await cli(['chat', sid, '-m', 'again', '--json'], env);
  t.equal(j.code, 0, j.stderr);
  const end = JSON.parse(j.stdout);
  t.same(Object.keys(end).sort(), ['finish_reason', 'result', 'seq', 'session_id', 'status', 'text', 'usage']);
  t.match(end, { session_id: sid, status: 'completed', finish_reason: 'stop', text: 'second answer' });
  t.match(end.usage, { input_tokens: 10, output_tokens: 5 }, 'usage: the token counts of the run');
  t.equal((await (await app.api(`/api/sessions/${sid}/messages`)).json()).length, 5);
});

t.test('a message piped on stdin is the message; a new session is titled by it', async (t) => {
  const { app, model } = await buildWithModel(t);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  model.script({ text: ['Here is python.'] });
  const r = await cli(['chat'], env, { input: 'show me python\n' });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'Here is python.\n');
  t.equal(model.requests.at(-1).messages.at(-1).content, 'show me python');
  const sid = /session (sess_\w+)/.exec(r.stderr)![1];
  t.equal((await (await app.api(`/api/sessions/${sid}`)).json()).intent, 'show me python', 'titled by its first message');

  // Into an existing session; an empty stdin is refused and sends nothing.
  model.script({ text: ['Again.'] });
  t.equal((await cli(['chat', sid], env, { input: 'and again' })).code, 0);
  t.equal(model.requests.at(-1).messages.at(-1).content, 'and again');
  const empty = await cli(['chat'], env, { input: '' });
  t.equal(empty.code, 1);
  t.match(empty.stderr, /^agentsvc: nothing to send: stdin is empty/);
  t.equal(model.requests.length, 2);
});

t.test('chat -m stopped by SIGINT: the stop is reported as done, never "could not stop"', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script({ text: Array.from({ length: 60 }, (_, i) => `w${i} `), delayMs: 100 });
  let sent = false;
  const r = await cli(['chat', '-m', 'count'], { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url }, {
    onStdout: (out, child) => {
      if (!sent && out.includes('w3 ')) {
        sent = true;
        child.kill('SIGINT');
      }
    },
  });
  t.ok(sent);
  t.equal(r.code, 1, 'interrupted: exit 1');
  t.match(r.stdout, /\[chat interrupted/);
  t.notMatch(r.stdout + r.stderr, /could not stop/);
});

t.test('chat -m: a failed run exits 1; a question is left for the interactive chat', async (t) => {
  const { app, model } = await buildWithModel(t);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  // 400 is not retried by the model client: the run fails at once.
  model.script({ status: 400 });
  const r = await cli(['chat', '-m', 'hi', '--json'], env);
  t.equal(r.code, 1);
  t.match(JSON.parse(r.stdout), { status: 'failed', finish_reason: 'error' });
  model.script({ status: 400 });
  const text = await cli(['chat', '-m', 'hi'], env);
  t.equal(text.code, 1);
  t.match(text.stdout, /error: .*\n\[chat failed: error\]\n$/, 'the error and the end status are printed');

  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which color?', options: [{ label: 'red' }, { label: 'blue' }] }] } }] });
  const q = await cli(['chat', '-m', 'pick'], env);
  t.equal(q.code, 3, 'paused on a question: exit 3 (waiting), though chat:end is completed');
  t.match(q.stdout, /\? AskUserQuestion\(Which color\?\)/);
  t.match(q.stderr, /the agent asks "Which color\?"; answer it with: agentsvc chat sess_/);
});

t.test('sessions list, show, delete', async (t) => {
  const { app, model } = await buildWithModel(t);
  app.service.tools.register(echoTool);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  const a = await createSession(app, app.adminKey, { intent: 'alpha invoices' });
  const b = await createSession(app, app.adminKey, { intent: 'beta reports' });
  model.script({ text: ['Working.'], toolCalls: [{ name: 'Echo', args: { text: 'x' } }] }, { text: ['Finished alpha.'] });
  t.equal((await cli(['chat', a, '-m', 'do alpha'], env)).code, 0);

  const list = await cli(['sessions', 'list'], env);
  t.equal(list.code, 0, list.stderr);
  const lines = list.stdout.trim().split('\n');
  t.match(lines[0], /^ID\s+STATUS\s+UPDATED \(UTC\)\s+TITLE$/);
  t.equal(lines.length, 3);
  t.match(list.stdout, new RegExp(`${a}\\s+completed\\s+\\S+ \\S+\\s+alpha invoices`));
  t.match(list.stdout, new RegExp(`${b}\\s+created\\s+\\S+ \\S+\\s+beta reports`));
  const json = JSON.parse((await cli(['sessions', 'list', '--json', '--limit', '1'], env)).stdout);
  t.match(json, { total: 2, limit: 1, offset: 0 });
  t.equal(json.items.length, 1);
  const q = JSON.parse((await cli(['sessions', 'list', '--json', '--q', 'beta'], env)).stdout);
  t.same(q.items.map((s: { id: string }) => s.id), [b]);
  const bad = await cli(['sessions', 'list', '--limit', '0'], env);
  t.equal(bad.code, 2, 'a flag out of bounds is a usage error');

  const show = await cli(['sessions', 'show', a], env);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, new RegExp(`^${a}  completed  alpha invoices\\n> do alpha\\nWorking\\.\\n● Echo\\(x\\)\\n  └ done`));
  t.match(show.stdout, /Finished alpha\.\n$/);
  const showJson = JSON.parse((await cli(['sessions', 'show', a, '--json'], env)).stdout);
  t.same(showJson.messages, await (await app.api(`/api/sessions/${a}/messages`)).json(), '--json: messages are GET messages');
  t.match(showJson.session, { id: a, intent: 'alpha invoices', status: 'completed' }, '--json: and the session');

  const refused = await cli(['sessions', 'delete', b], env);
  t.equal(refused.code, 1, 'no --yes and no terminal: refused');
  t.match(refused.stderr, /pass --yes/);
  t.equal((await app.api(`/api/sessions/${b}`)).status, 200, 'nothing deleted');
  const del = await cli(['sessions', 'delete', b, '--yes', '--json'], env);
  t.equal(del.code, 0, del.stderr);
  t.same(JSON.parse(del.stdout), { deleted: true });
  t.equal((await app.api(`/api/sessions/${b}`)).status, 404);
});

t.test('errors: unknown or foreign session, bad key, service down: one line, exit 1', async (t) => {
  const { app } = await buildWithModel(t);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  const bob = await app.newUser();
  const bobs = await createSession(app, bob.key, { intent: 'private' });
  for (const args of [['chat', 'sess_nope', '-m', 'hi'], ['sessions', 'show', 'sess_nope'], ['sessions', 'delete', 'sess_nope', '--yes'], ['sessions', 'show', bobs], ['chat', bobs, '-m', 'hi']]) {
    const r = await cli(args, env);
    t.equal(r.code, 1, args.join(' '));
    t.equal(r.stderr, `agentsvc: session ${args[args[0] === 'chat' ? 1 : 2]} not found\n`, `${args.join(' ')}: one line`);
  }
  t.equal((await app.api(`/api/sessions/${bobs}`, { key: bob.key })).status, 200, "bob's session is untouched");

  const badKey = await cli(['sessions', 'list', '--key', 'sk-agentsvc-v2-notarealkeynotarealkeynotarealkey'], env);
  t.equal(badKey.code, 1);
  t.match(badKey.stderr, /^agentsvc: the key from --key was refused \(401/);
  t.equal(badKey.stderr.trim().split('\n').length, 1);
  const badKeyChat = await cli(['chat', '-m', 'hi'], { ...env, AGENTSVC_KEY: 'sk-agentsvc-v2-notarealkeynotarealkeynotarealkey' });
  t.equal(badKeyChat.code, 1);
  t.match(badKeyChat.stderr, /^agentsvc: the key from AGENTSVC_KEY was refused/);

  const proxy = await dropProxy(1);
  await proxy.close(); // a port where nothing listens now
  for (const args of [['sessions', 'list'], ['chat', '-m', 'hi'], ['sessions', 'show', 'sess_x']]) {
    const r = await cli(args, { AGENTSVC_HOME: app.home, AGENTSVC_URL: proxy.url });
    t.equal(r.code, 1, `${args.join(' ')} with the service down`);
    t.match(r.stderr, new RegExp(`^agentsvc: cannot reach agentsvc at ${proxy.url} \\(ECONNREFUSED\\); is it running\\?`));
    t.equal(r.stderr.trim().split('\n').length, 1);
    t.notOk(hasStack(r.stderr + r.stdout));
  }
});

t.test('a dropped connection mid-answer: the client resubscribes with since_seq, no text lost or repeated', async (t) => {
  const { app, model } = await buildWithModel(t);
  const words = Array.from({ length: 30 }, (_, i) => `w${i} `);
  model.script({ text: words, delayMs: 60 });
  const port = Number(new URL(app.url).port);
  const proxy = await dropProxy(port);
  t.teardown(() => proxy.close());
  let cutAt = -1;
  const r = await cli(['chat', '-m', 'stream please'], { AGENTSVC_HOME: app.home, AGENTSVC_URL: proxy.url, AGENTSVC_KEY: app.adminKey }, {
    onStdout: (out) => {
      // Cut every connection once a third of the answer has arrived.
      if (cutAt < 0 && out.includes('w10 ')) cutAt = proxy.cut();
    },
  });
  t.ok(cutAt > 0, `connections were cut (${cutAt} sockets)`);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /connection lost .*reconnecting/);
  t.match(r.stderr, /\[reconnected\]/);
  t.equal(r.stdout.trim(), words.join('').trim(), 'the answer exactly once, in order');
});
