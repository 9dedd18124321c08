import { Redis } from 'ioredis';
import t from 'tap';
import { kill } from '../helpers/cli.js';
import { needs } from '../helpers/needs.js';
import { type Ev, recorder, twoNodes, until } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';

/**
 * docs/inbox.md with docs/scale-out.md: an approval timeout is a delayed job; with REDIS_URL it is
 * a BullMQ job in Redis. Node A asks and then dies (SIGKILL) before the deadline; node B's BullMQ
 * worker takes the job, decides the approval (`on_timeout: allow`, `decided_by: "timeout"`) and
 * the run goes on on B.
 */

const url = process.env.TEST_REDIS_URL;
const ends = (evs: Ev[]) => evs.filter((e) => e.name === 'chat:end').map((e) => e.payload);

if (!url) {
  needs(t, 'the BullMQ approval-timeout test', 'TEST_REDIS_URL is not set (test/run.mjs starts redis-server when it is installed)');
} else {
  t.test('an approval timeout set on node A fires through BullMQ on node B after A died', async (t) => {
    const model = await startFakeModel();
    t.teardown(() => model.close());
    model.fallback = (body: any) => (body.messages.some((m: any) => m.role === 'tool') ? { text: ['written'] } : { toolCalls: [{ name: 'Write', args: { file_path: 'secret/plan.txt', content: 'the plan' } }] });
    const rule = { tool: 'Write', pattern: 'secret/**', action: 'ask', timeout_seconds: 6, on_timeout: 'allow' };
    const { a, b } = await twoNodes(t, model, Number(new URL(url).port), { AGENTSVC_POLICY: JSON.stringify({ default: 'allow', rules: [rule] }) });
    const sid = (await (await a.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;
    const sockA = await a.socket();
    const sockB = await b.socket();
    const onB = recorder(sockB, sid);
    await sockB.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
    await sockA.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
    t.equal((await sockA.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'write the plan' })).ok, true, 'the run starts on A');
    await until('the pause, seen on B', () => ends(onB).length === 1);
    t.match(ends(onB)[0], { status: 'completed', finish_reason: 'tool_approval' });

    // The deadline is a delayed BullMQ job in Redis (not a delayed_jobs row).
    const redis = new Redis(url, { maxRetriesPerRequest: 1 });
    t.teardown(() => redis.quit());
    const delayed = await redis.keys('agentsvc:*:agentsvc-delayed:delayed');
    const ids = (await Promise.all(delayed.map((k) => redis.zrange(k, 0, -1)))).flat();
    const [item] = (await (await b.api('/api/inbox')).json()).items;
    t.match(item, { kind: 'approval', on_timeout: 'allow' });
    t.ok(
      ids.some((id) => id.includes(item.tool_call_id)),
      `a delayed BullMQ job for ${item.tool_call_id} (${ids.length} delayed: ${ids.join(', ')})`,
    );

    // A dies before the deadline: only B's worker can take the job.
    t.ok(Date.now() < Date.parse(item.timeout_at), 'A stops before the deadline');
    await kill(a.up.child, 'SIGKILL');
    await until('the run goes on and ends, seen on B', () => ends(onB).length === 2, 30_000);
    t.match(ends(onB)[1], { status: 'completed', finish_reason: 'stop' });
    const msgs = await (await b.api(`/api/sessions/${sid}/messages`)).json();
    t.match(msgs[1].tool_calls[0], { id: item.tool_call_id, status: 'done', pending_question_ref: null }, 'the call ran (on_timeout: allow)');
    t.equal(await (await b.api(`/api/sessions/${sid}/files/secret/plan.txt`)).text(), 'the plan');
    const audit = await (await b.api(`/api/audit?session_id=${sid}&action=approved`)).json();
    t.match(audit.items, [{ tool_call_id: item.tool_call_id, decided_by: 'timeout' }]);
    t.same((await (await b.api('/api/inbox')).json()).items, [], 'nothing waits any more');
  });
}
