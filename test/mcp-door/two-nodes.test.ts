import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { kill } from '../helpers/cli.js';
import { freePort, recorder, redisServerFor, startRedis, twoNodes, until } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';

/**
 * The MCP door on two nodes (docs/protocol-doors.md, docs/scale-out.md): two real `agentsvc up`
 * processes on one PostgreSQL and one Redis. A message sent through /mcp on node A is seen live by a
 * Socket.IO client subscribed on node B: the same events, while the MCP call is still waiting.
 */

if (redisServerFor('two-node MCP door test')) {
  t.test('a message sent through MCP on node A streams live to a socket on node B', async (t) => {
    const model = await startFakeModel();
    t.teardown(() => model.close());
    model.fallback = { text: Array.from({ length: 20 }, (_, i) => `w${i} `), delayMs: 50 };
    const redisPort = await freePort();
    const redis = await startRedis(redisPort);
    t.teardown(() => kill(redis, 'SIGKILL'));
    const { a, b } = await twoNodes(t, model, redisPort);

    const client = new Client({ name: 'agentsvc-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${a.up.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${a.key}` } } }));
    t.teardown(() => client.close());
    type Result = { structuredContent: any };
    const created = (await client.callTool({ name: 'create_session', arguments: { intent: 'two nodes' } })) as Result;
    const sid = created.structuredContent.session_id as string;

    const sockB = await b.socket();
    const onB = recorder(sockB, sid);
    t.same(await sockB.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid }), { ok: true, session_id: sid });

    let answeredAt = 0;
    const sent = client.callTool({ name: 'send_message', arguments: { session_id: sid, message: 'hello from A' } }, undefined, { timeout: 30_000 }).then((r) => {
      answeredAt = Date.now();
      return r as Result;
    });
    await until('text of the run on B', () => onB.some((e) => e.payload.patch_type === 'add_content'));
    const firstTextOnB = Date.now();
    const r = await sent;
    t.ok(firstTextOnB < answeredAt, `B saw the run's text while the MCP call still waited (${answeredAt - firstTextOnB} ms before its answer)`);
    await until('chat:end on B', () => onB.some((e) => e.name === 'chat:end'));

    const text = Array.from({ length: 20 }, (_, i) => `w${i} `).join('');
    t.match(r.structuredContent, { session_id: sid, status: 'completed', text });
    const streamed = onB
      .filter((e) => e.payload.patch_type === 'add_content')
      .map((e) => e.payload.data.text_delta)
      .join('');
    t.equal(streamed, text, 'B streamed all of the text');
    const starts = onB.filter((e) => e.name === 'turn:start').map((e) => e.payload.turn_id);
    t.same(r.structuredContent.turn_ids, starts, 'the turns the MCP answer names are those B saw start');
    t.match(onB.find((e) => e.name === 'turn:start'), { payload: { role: 'user' } });
    t.match(onB.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
    const seqs = onB.map((e) => e.payload.seq);
    t.same(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0] + i), 'B: one seq sequence, no gap or repeat');
  });
}
