import t from 'tap';
import { spawnSync } from 'node:child_process';
import { type ConnectionOptions, Queue } from 'bullmq';
import { kill } from '../helpers/cli.js';
import { seqProblems } from '../helpers/chaos.js';
import { pace, quietFor, waitFor } from '../helpers/wait.js';
import { type Ev, freePort, recorder, socketTo, redisServerFor, startRedis, twoNodes, until, type Running } from '../helpers/nodes.js';
import { startFakeModel } from '../fixtures/fake-model.js';

/**
 * Scale-out (docs/scale-out.md): two real `agentsvc up` processes on one PostgreSQL and one Redis (a
 * redis-server this test starts, so it can restart it). A client on either node sees every run.
 */


const deltas = (evs: Ev[]) => evs.filter((e) => e.payload.patch_type === 'add_content').length;
/** The streamed text: deltas that arrive within one tick may travel as one event, so compare text, not events. */
const streamed = (evs: Ev[]) => evs.filter((e) => e.payload.patch_type === 'add_content').map((e) => e.payload.data.text_delta).join('');
const ended = (evs: Ev[]) => evs.find((e) => e.name === 'chat:end');
/** AGENTSVC_NODE_STALE_SECONDS of both nodes. */
const STALE_SECONDS = 5;

/** Promote the scheduled occurrences waiting in BullMQ (every install on this Redis) to due now; answers how many. */
async function promoteScheduled(redisPort: number): Promise<number> {
  const suffix = ':agentsvc-scheduled:delayed';
  const scan = spawnSync('redis-cli', ['-p', String(redisPort), '--scan', '--pattern', `*${suffix}`], { encoding: 'utf8', timeout: 10_000 });
  let n = 0;
  for (const key of scan.stdout.split('\n').filter(Boolean)) {
    const queue = new Queue('agentsvc-scheduled', { connection: { url: `redis://127.0.0.1:${redisPort}`, maxRetriesPerRequest: null } as ConnectionOptions, prefix: key.slice(0, -suffix.length) });
    try {
      for (const job of await queue.getDelayed()) {
        await job.promote();
        n++;
      }
    } finally {
      await queue.close();
    }
  }
  return n;
}

if (redisServerFor('two-node test')) {
  t.test('two nodes on one PostgreSQL and one Redis', async (t) => {
    const model = await startFakeModel();
    t.teardown(() => model.close());
    // Routes on the session's last user message: slow-* streams for ~12 s, anything else answers at once.
    model.fallback = (body: any) => {
      const last = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
      if (last.startsWith('slow')) return { text: Array.from({ length: 400 }, (_, i) => `w${i} `), delayMs: 30 };
      return { text: ['quick ', 'answer ', last] };
    };
    const redisPort = await freePort();
    let redis = await startRedis(redisPort);
    t.teardown(() => kill(redis, 'SIGKILL'));
    // Each node has its own home; the workspaces are shared (docs/scale-out.md), here one local folder.
    // A node is dead after 5 s without a heartbeat (renewed every 0.83 s), not 30: the SIGKILL case
    // below takes seconds, and the runs streaming ~12 s on a live node show a live node is never
    // taken for dead.
    const { a, b } = await twoNodes(t, model, redisPort, { AGENTSVC_NODE_STALE_SECONDS: String(STALE_SECONDS) });
    t.comment(`node A listening after ${a.up.startMs} ms, node B after ${b.up.startMs} ms`);
    const newSession = async (node: Running) => (await (await node.api('/api/sessions', { method: 'POST', json: {} })).json()).session_id as string;
    const sockA = await a.socket();
    const sockB = await b.socket();
    // Checked before A is killed: an every-minute task with both nodes up runs each occurrence once.
    const task = await (await a.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Both nodes', prompt: 'scheduled tick', cron: '* * * * *', timezone: 'UTC' } })).json();
    t.equal(task.enabled, true, 'a scheduled task created through A');

    await t.test('a chat sent through A streams live to a client on B, same events, one seq sequence', async (t) => {
      const sid = await newSession(a);
      const onA = recorder(sockA, sid);
      const onB = recorder(sockB, sid);
      await sockA.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
      t.same(await sockB.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid }), { ok: true, session_id: sid });
      t.equal((await sockA.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'hello' })).ok, true);
      await until('chat:end on B', () => !!ended(onB));
      await until('chat:end on A', () => !!ended(onA));
      t.same(seqProblems(onB.map((e) => e.payload.seq), 'B'), [], 'B: seq 1, 2, 3… with no gap or repeat');
      t.same(onB, onA, 'B received exactly what A sent to its own client');
      t.equal(onB[0].payload.seq, 1);
      t.match(ended(onB), { payload: { status: 'completed' } });

      const replay = await b.socket();
      const got = recorder(replay, sid);
      await replay.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid, since_seq: 0 });
      await until('replay on B', () => got.length >= onA.length);
      t.same(got, onA, 'replay on B from since_seq 0 is the run as streamed');
    });

    await t.test('SESSION_BUSY and chat:stop across nodes; the next run, on B, continues the seq', async (t) => {
      const sid = await newSession(a);
      const onA = recorder(sockA, sid);
      const onB = recorder(sockB, sid);
      await sockA.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
      await sockB.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
      t.equal((await sockA.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'slow one' })).ok, true);
      await until('the run on A streaming to B', () => deltas(onB) >= 5);
      const busy = await sockB.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'me too' });
      t.match(busy, { ok: false, error: { code: 'SESSION_BUSY' } }, 'a send on B while A runs the session');
      const t0 = Date.now();
      const stop = await sockB.timeout(10_000).emitWithAck('chat:stop', { session_id: sid });
      await until('chat:end after the stop', () => !!ended(onB), 5000);
      const ms = Date.now() - t0;
      t.comment(`chat:stop on B -> chat:end of the run on A: ${ms} ms`);
      t.ok(ms <= 2000, `stopped within 2 s (${ms} ms)`);
      t.match(stop, { ok: true });
      t.match(ended(onB), { payload: { status: 'interrupted' } });
      t.equal((await (await b.api(`/api/sessions/${sid}`)).json()).status, 'interrupted');
      await until('chat:end on A', () => !!ended(onA));

      const before = onA.length;
      t.equal((await sockB.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'again' })).ok, true, 'B runs the next chat');
      await until('second chat:end on A', () => onA.filter((e) => e.name === 'chat:end').length === 2);
      // Each client has its own connection: B's may read the last event after A's did.
      await until('second chat:end on B', () => onB.filter((e) => e.name === 'chat:end').length === 2);
      t.equal(onA[before].payload.seq, onA[before - 1].payload.seq + 1, 'the run on B starts right after the run on A');
      t.same(seqProblems(onA.map((e) => e.payload.seq), 'A'), [], 'one seq sequence across both runs');
      t.same(onB, onA);
    });

    await t.test('the workspaces are shared: a file written through A is read through B', async (t) => {
      const sid = await newSession(a);
      const put = await a.api(`/api/sessions/${sid}/files/notes/a.txt`, { method: 'PUT', json: { content: 'from node A' } });
      t.equal(put.status, 200);
      const got = await b.api(`/api/sessions/${sid}/files/notes/a.txt`);
      t.equal(got.status, 200);
      t.equal(await got.text(), 'from node A');
      t.notOk(a.up.out().includes('AGENTSVC_WORKSPACES'), 'no shared-storage warning when AGENTSVC_WORKSPACES is set');
    });

    await t.test('a key revoked through A disconnects its socket on B', async (t) => {
      const created = await (await a.api('/api/user/api-keys/', { method: 'POST', json: { name: 'short-lived' } })).json();
      const sock = await socketTo(t, b.up.url, created.plaintext);
      let gone = false;
      sock.on('disconnect', () => (gone = true));
      t.equal((await a.api(`/api/user/api-keys/${created.key.id}`, { method: 'DELETE' })).status, 204);
      await until('disconnect on B', () => gone, 10_000);
      t.ok(gone, 'disconnected');
    });

    await t.test('Redis restarts mid-run: health says so, streaming resumes, nothing lost on B', async (t) => {
      const sid = await newSession(a);
      const onB = recorder(sockB, sid);
      await sockB.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
      t.equal((await sockA.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'slow two' })).ok, true);
      await until('streaming to B', () => deltas(onB) >= 5);
      await kill(redis, 'SIGKILL');
      const health = async (node: Running) => {
        const r = await node.api('/api/health');
        return { code: r.status, body: await r.json() };
      };
      let hA = await health(a);
      await waitFor(async () => (hA = await health(a)).body.status === 'degraded', { timeoutMs: 5000, everyMs: 100, what: 'A to report Redis down' }).catch(() => {}); // asserted below
      t.match(hA, { code: 200, body: { status: 'degraded', checks: { database: 'ok', redis: 'down' } } }, 'A: 200 degraded, redis down');
      t.match(await health(b), { code: 200, body: { status: 'degraded' } }, 'B too');
      await pace(1000, 'Redis stays down a while, the run going on without it');
      redis = await startRedis(redisPort);
      const ok = await waitFor(async () => (await health(a)).body.status === 'ok' && (await health(b)).body.status === 'ok', {
        timeoutMs: 10_000,
        everyMs: 100,
        what: 'both nodes ok again',
      }).then(
        () => true,
        () => false,
      );
      t.ok(ok, 'both nodes report ok once Redis is back');
      await until('chat:end on B', () => !!ended(onB), 30_000);
      t.match(ended(onB), { payload: { status: 'completed' } }, 'the run finished on A and B heard the end');
      t.same(seqProblems(onB.map((e) => e.payload.seq), 'B'), [], 'B got every event once, in order (gaps filled from the log)');
      t.equal(streamed(onB), Array.from({ length: 400 }, (_, i) => `w${i} `).join(''), 'every text delta, in order');
    });

    await t.test('a scheduled task fires once with two nodes up', async (t) => {
      const completed = async () => ((await (await b.api(`/api/scheduled-tasks/${task.id}/runs`)).json()) as any[]).some((r) => r.status === 'completed');
      // The occurrence made due now rather than at the next minute (up to 60 s away): both nodes'
      // workers take it from BullMQ as they would at its time (its timing: scheduling/bullmq.test.ts).
      await waitFor(async () => (await completed()) || (await promoteScheduled(redisPort)) > 0, { timeoutMs: 20_000, everyMs: 250, what: 'the occurrence waiting in BullMQ' });
      await waitFor(completed, { timeoutMs: 75_000, everyMs: 250, what: 'a completed occurrence' }).catch(() => {}); // asserted below
      await quietFor(500, 'the other node firing the same occurrence');
      const runs: any[] = await (await b.api(`/api/scheduled-tasks/${task.id}/runs`)).json();

      t.ok(runs.length >= 1, `${runs.length} occurrence(s) so far`);
      t.ok(runs.some((r) => r.status === 'completed'), 'completed');
      const chats = model.requests.filter((r) => JSON.stringify(r.messages).includes('scheduled tick')).length;
      t.equal(chats, runs.length, 'one chat per occurrence, whichever node took it');
      const sessions = new Set(runs.map((r) => r.session_id));
      t.equal(sessions.size, runs.length, 'one session per occurrence');
      await b.api(`/api/scheduled-tasks/${task.id}/stop`, { method: 'POST' });
    });

    await t.test('SIGKILL of A mid-run: B closes the run, without a restart', async (t) => {
      const sid = await newSession(a);
      const onB = recorder(sockB, sid);
      await sockB.timeout(10_000).emitWithAck('session:subscribe', { session_id: sid });
      t.equal((await sockA.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'slow three' })).ok, true);
      await until('streaming to B', () => deltas(onB) >= 5);
      const t0 = Date.now();
      await kill(a.up.child, 'SIGKILL');
      // Closed once A's last heartbeat is STALE_SECONDS old, at B's next check (0.83 s); the
      // default 30 s would not make it.
      await until('chat:end from B', () => !!ended(onB), 20_000);
      const ms = Date.now() - t0;
      t.comment(`owner killed -> run closed by the other node: ${ms} ms`);
      // Not at once either: A's lease was renewed less than a second before the kill (a loaded
      // machine may delay that renewal, hence half).
      t.ok(ms >= (STALE_SECONDS * 1000) / 2 && ms < 20_000, `closed after A's lease went stale (${STALE_SECONDS} s), not 30 s: ${ms} ms`);
      t.match(ended(onB), { payload: { status: 'interrupted' } });
      const seqs = onB.map((e) => e.payload.seq);
      t.ok(
        seqs.every((s, i) => i === 0 || s > seqs[i - 1]),
        'seqs only grow (the closing event comes after every event clients saw)',
      );
      t.equal((await (await b.api(`/api/sessions/${sid}`)).json()).status, 'interrupted');
      t.equal((await sockB.timeout(10_000).emitWithAck('chat:send', { session_id: sid, message: 'after the crash' })).ok, true, 'the session works on B');
      await until('the next run on B', () => onB.filter((e) => e.name === 'chat:end').length === 2);
      t.match(onB.at(-1), { name: 'chat:end', payload: { status: 'completed' } });
    });
  });
}
