import t from 'tap';
import { kill } from '../helpers/cli.js';
import { type Ev, freePort, recorder, redisServerFor, startRedis, twoNodes, until } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';

/**
 * docs/policy.md with docs/scale-out.md: an approval is a durable pause like AskUserQuestion, so one asked
 * by a run on node A is answered through node B (two `agentsvc up` on one PostgreSQL and one
 * Redis), and the run goes on there: the call runs once, clients on both nodes see the end, and the
 * audit names both decisions. (An approval across a restart: test/policy/approvals.test.ts.)
 */


const ends = (evs: Ev[]) => evs.filter((e) => e.name === 'chat:end').map((e) => e.payload);

if (redisServerFor('two-node approval test')) {
  t.test('an approval asked by a run on node A is answered through node B; the run goes on', async (t) => {
    const model = await startFakeModel();
    t.teardown(() => model.close());
    // A write under secret/ first; once its result is in the history, a closing answer.
    model.fallback = (body: any) => (body.messages.some((m: any) => m.role === 'tool') ? { text: ['written'] } : { toolCalls: [{ name: 'Write', args: { file_path: 'secret/plan.txt', content: 'the plan' } }] });
    const redisPort = await freePort();
    const redis = await startRedis(redisPort);
    t.teardown(() => kill(redis, 'SIGKILL'));
    const { a, b } = await twoNodes(t, model, redisPort, {
      AGENTSVC_POLICY: JSON.stringify({ default: 'allow', rules: [{ tool: 'Write', pattern: 'secret/**', action: 'ask' }] }),
    });
    const sid = (await (await a.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;
    const sockA = await a.socket();
    const sockB = await b.socket();
    const onA = recorder(sockA, sid);
    const onB = recorder(sockB, sid);
    await sockA.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
    await sockB.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });

    t.equal((await sockA.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'write the plan' })).ok, true, 'the run starts on A');
    await until('the pause, seen on B', () => ends(onB).length === 1);
    t.match(ends(onB)[0], { status: 'completed', finish_reason: 'tool_approval' });
    const asked = (await (await b.api(`/api/sessions/${sid}/messages`)).json())[1].tool_calls[0];
    t.match(asked, { status: 'awaiting_answer', pending_question_ref: { type: 'approval', tool_name: 'Write', rule: { tool: 'Write', pattern: 'secret/**', action: 'ask' }, source: 'install' } }, 'B reads the pending approval');
    t.equal((await b.api(`/api/sessions/${sid}/files/secret/plan.txt`)).status, 404, 'nothing written before the answer');

    const ack = await sockB.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: asked.id, selections: { 0: [0] } } });
    t.same(ack, { ok: true, turn_id: null }, 'Allow once, answered through B');
    await until('the run ends, seen on A', () => ends(onA).length === 2);
    await until('and on B', () => ends(onB).length === 2);
    t.match(ends(onA)[1], { status: 'completed', finish_reason: 'stop' });
    const msgs = await (await a.api(`/api/sessions/${sid}/messages`)).json();
    t.match(msgs[1].tool_calls[0], { id: asked.id, status: 'done', pending_question_ref: null }, 'the call ran');
    t.match(msgs.at(-1), { role: 'assistant', status: 'completed' });
    const file = await a.api(`/api/sessions/${sid}/files/secret/plan.txt`);
    t.equal(await file.text(), 'the plan', 'the file is there, read through A');
    t.equal(model.requests.filter((r: any) => !r.messages.some((m: any) => m.role === 'tool')).length, 1, 'the model was not asked again for the call');
    const audit = await (await a.api(`/api/audit?session_id=${sid}`)).json();
    t.same(
      audit.items.map((r: { action: string }) => r.action),
      ['approved', 'asked'],
      'asked on A, approved through B',
    );
    // An answer given twice (a second node, a retried client) changes nothing.
    const again = await sockA.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: '', askuser_answer: { tool_call_id: asked.id, selections: { 0: [0] } } });
    t.equal(again.ok, false, `a second answer is refused (${again.error?.code})`);
  });
}
