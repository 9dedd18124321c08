import t from 'tap';
import { createServer } from 'node:http';
import { countTokens } from '../../src/core/models/tokenizer.js';
import { toOpenAITools } from '../../src/core/models/port.js';
import { ToolRegistry } from '../../src/core/tools/registry.js';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { chat, offered } from '../plugins/helpers.js';
import { integrationsLoaded } from '../integrations/helpers.js';

/** An integration of 300 operations (`things_<i>_get`), each with a couple of parameters. */
function bigSpec(n: number) {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    paths[`/things/${i}/{id}`] = {
      get: {
        operationId: `things_${i}_get`,
        summary: `Get thing number ${i}`,
        description: `Answers thing ${i} of the account, with its owner, its tags and when it last changed.`,
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'fields', in: 'query', schema: { type: 'string', description: 'Fields to answer, comma separated' } },
        ],
        responses: { '200': { description: 'ok' } },
      },
    };
  }
  return { openapi: '3.0.3', info: { title: 'Things', version: '1' }, paths };
}

const FOUND = 'api__things__things_7_get';
const tokensOf = (tools: unknown[]) => countTokens(JSON.stringify(tools));

t.test("context-stats' tools_tokens counts the tool definitions a request carries, not every tool registered", async (t) => {
  const server = createServer((_req, res) => res.setHeader('content-type', 'application/json').end('{"id":"x"}'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const { app, model } = await buildWithModel(t, {
    AGENTSVC_INTEGRATIONS: JSON.stringify({ things: { type: 'openapi', spec: bigSpec(300), base_url: base } }),
    AGENTSVC_WEBFETCH_ALLOW_PRIVATE: '1',
  });
  t.match((await integrationsLoaded(app))['integrations:things'], { status: 'ok' });
  const sid = await createSession(app);
  const stats = async () => (await (await app.api(`/api/sessions/${sid}/context-stats`)).json()) as { tools_tokens: number; total_tokens: number };
  const history = async () => (await (await app.api(`/api/sessions/${sid}/history`)).json()) as { tools_tokens: number };
  const all = await app.service.tools.forSession({ userId: 'usr_x', sessionId: sid } as never);
  const everyTool = countTokens(JSON.stringify(toOpenAITools(ToolRegistry.specs(all))));

  const before = await stats();
  await chat(
    app,
    model,
    sid,
    'get thing 7',
    { toolCalls: [{ name: 'ToolSearch', args: { query: FOUND } }] },
    { toolCalls: [{ name: FOUND, args: { id: 'x' } }] },
    { text: ['done'] },
  );
  t.ok(offered(model, 0).includes('ToolSearch') && !offered(model, 0).includes(FOUND), 'the first request is searched');
  t.equal(before.tools_tokens, tokensOf(model.requests[0].tools), "before the run: exactly the first request's tool definitions");
  t.ok(before.tools_tokens * 10 < everyTool, `far below every registered tool (${before.tools_tokens} < ${everyTool} / 10)`);

  // After a run that called a found tool: the next request carries it as a recently called tool.
  const after = await stats();
  t.equal((await history()).tools_tokens, after.tools_tokens, 'history counts the same');
  await chat(app, model, sid, 'again', { text: ['ok'] });
  t.ok(offered(model, 3).includes(FOUND), 'the next run offers the tool it called');
  t.equal(after.tools_tokens, tokensOf(model.requests[3].tools), "after it: exactly the next request's tool definitions");
  t.ok(after.tools_tokens > before.tools_tokens, 'which now include the called tool');
  t.ok(after.tools_tokens * 10 < everyTool);
});
