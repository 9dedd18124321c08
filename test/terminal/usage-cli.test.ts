import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';
import { cli } from './helpers.js';
import { Api } from '../../src/cli/terminal/api.js';
import { sessionCostLines } from '../../src/cli/terminal/usage.js';
import { plain } from '../../src/cli/terminal/style.js';

// `agentsvc usage`, `chat -m --json` usage with cost, and /cost's lines (docs/models-and-usage.md, issue 29).

const MODELS = JSON.stringify([{ id: 'fake-model', price: { input: 3, output: 15 } }, { id: 'cheap', price: { input: 1, output: 2 } }]);

t.test('agentsvc usage: a table with a bar per row and a total; --json is the REST answer', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS });
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  model.script({ text: ['one'], usage: { prompt_tokens: 1000, completion_tokens: 200 } });
  const r = await cli(['chat', '-m', 'first', '--json'], env);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout).usage, { input_tokens: 1000, output_tokens: 200, cost: (1000 * 3 + 200 * 15) / 1e6 }, 'chat -m --json: the run usage with its cost');
  const cheapSid = await createSession(app, app.adminKey, { model: 'cheap' });
  const { sock, seen } = await watch(app, cheapSid);
  model.script({ text: ['two'], usage: { prompt_tokens: 500, completion_tokens: 100 } });
  await request(sock, 'chat:send', { session_id: cheapSid, message: 'second' });
  await untilEnd(seen, cheapSid);
  // The inserts are off the streaming path: wait until both are in.
  await waitFor(async () => (await (await app.api('/api/usage')).json()).total.calls >= 2, { timeoutMs: 5000, everyMs: 20, what: 'both runs counted' });


  const table = await cli(['usage', '--by', 'model'], env);
  t.equal(table.code, 0, table.stderr);
  t.comment(`\n${table.stdout}`);
  const lines = table.stdout.trimEnd().split('\n');
  t.match(lines[0], /^MODEL\s+CALLS\s+INPUT\s+OUTPUT\s+COST$/);
  t.match(lines[1], /^cheap\s+1\s+500\s+100\s+0\.0007\s+█+$/);
  t.match(lines[2], /^fake-model\s+1\s+1,000\s+200\s+0\.0060\s+█+$/);
  t.ok(lines[2].split('█').length > lines[1].split('█').length, 'the costlier row has the longer bar');
  t.match(lines[3], /^TOTAL\s+2\s+1,500\s+300\s+0\.0067$/);
  const json = await cli(['usage', '--by', 'day', '--json'], env);
  t.same(JSON.parse(json.stdout), await (await app.api('/api/usage?group_by=day')).json());
  const bad = await cli(['usage', '--by', 'week'], env);
  t.equal(bad.code, 2, 'an unknown --by is a usage error');
  const badDate = await cli(['usage', '--from', 'yesterday'], env);
  t.equal(badDate.code, 1);
  t.match(badDate.stderr, /from/);

  const api = new Api({ url: app.url, urlFrom: 'test', key: app.adminKey, keyFrom: 'test', home: app.home });
  t.same(await sessionCostLines(api, cheapSid, plain), ['session: 1 model calls, 500 input + 100 output tokens, cost 0.0007'], '/cost: the session');
});
