import t from 'tap';
import { buildWithModel, createSession, subscribe } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { catchCrashes, connectedSocket, deadline, seqProblems, transcriptProblems } from '../helpers/chaos.js';

/**
 * Back-to-back chats on one session: each chat:send goes out the moment the previous chat:end
 * arrives, on the same socket. This is the window where the previous run is still finishing
 * (flushing its events, releasing the session's seq counter) while the next one starts.
 */

const CLIENTS = Number(process.env.CHAOS_B2B_CLIENTS ?? 50);
const CHATS = Number(process.env.CHAOS_B2B_CHATS ?? 20);

/** One tool call per chat (Bash, Write or Read), then an answer once the tool result is back. */
function router(body: any) {
  const last = body.messages.at(-1);
  const user = body.messages.filter((m: any) => m.role === 'user').at(-1).content as string;
  const k = Number(/#(\d+)/.exec(user)?.[1] ?? 0);
  if (last.role === 'tool') return { text: ['done ', `#${k}`] };
  if (k % 3 === 0) return { text: ['running'], toolCalls: [{ name: 'Bash', args: { command: `echo chat-${k}` } }] };
  if (k % 3 === 1) return { toolCalls: [{ name: 'Write', args: { file_path: `n${k}.txt`, content: `note ${k}\n` } }] };
  return { toolCalls: [{ name: 'Read', args: { file_path: `n${k - 1}.txt` } }] };
}

t.test(`${CLIENTS} sockets x ${CHATS} back-to-back chats with tool calls`, async (t) => {
  const crashes = catchCrashes(t);
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_TIMEOUT_MS: '20000' });
  model.fallback = router;
  const failures: string[] = [];
  let completed = 0;
  let events = 0;
  const sessions: { sid: string; seqs: number[] }[] = [];
  const t0 = Date.now();

  const client = async (c: number) => {
    const sid = await createSession(app);
    const sock = await connectedSocket(app);
    const seqs: number[] = [];
    sessions.push({ sid, seqs });
    let onEnd: ((p: any) => void) | null = null;
    sock.onAny((name, payload) => {
      if (payload?.session_id !== sid) return;
      seqs.push(payload.seq);
      if (name === 'chat:end') onEnd?.(payload);
    });
    await subscribe(sock, sid);
    for (let k = 0; k < CHATS; k++) {
      const ended = new Promise<any>((resolve) => (onEnd = resolve));
      let ack: any;
      try {
        // Lost acks and ends are what this checks, not latency (bench/): on a 2-core CI machine
        // running other test files beside these 50 clients, an ack has taken over 15 s.
        ack = await request(sock, 'chat:send', { session_id: sid, message: `client ${c} chat #${k}` }, 30_000);
      } catch (e) {
        failures.push(`client ${c} chat ${k + 1}: no ack (${(e as Error).message})`);
        return;
      }
      if (!ack.ok) {
        failures.push(`client ${c} chat ${k + 1}: ack ${JSON.stringify(ack)}`);
        return;
      }
      let end: any;
      try {
        end = await deadline(ended, 40_000, `client ${c} chat ${k + 1} chat:end`);
      } catch (e) {
        failures.push((e as Error).message);
        return;
      }
      if (end.status !== 'completed' || end.finish_reason !== 'stop') {
        failures.push(`client ${c} chat ${k + 1}: chat:end ${JSON.stringify(end)}`);
        return;
      }
      completed++;
    }
  };

  // All clients run at once; each is bounded by its per-chat deadlines, the whole by this one.
  await deadline(Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c))), 180_000, 'all clients');
  const elapsed = Date.now() - t0;

  const seqIssues: string[] = [];
  const transcripts: string[] = [];
  for (const s of sessions) {
    events += s.seqs.length;
    seqIssues.push(...seqProblems(s.seqs, s.sid));
    transcripts.push(...(await transcriptProblems(app.api, s.sid)));
  }
  t.comment(`chats completed: ${completed}/${CLIENTS * CHATS} in ${elapsed} ms; events checked: ${events}; model calls: ${model.requests.length}`);
  t.same(crashes.slice(0, 3), [], `no uncaught exception or unhandled rejection in the service (${crashes.length})`);
  t.same(failures.slice(0, 10), [], `every chat acked ok and ended completed (${failures.length} failures)`);
  t.equal(completed, CLIENTS * CHATS, 'chats completed');
  t.same(seqIssues.slice(0, 10), [], 'every session saw contiguous seqs 1..N');
  t.same(transcripts.slice(0, 10), [], `every transcript valid and session completed (${transcripts.length} problems)`);
  t.equal((await app.api('/api/health')).status, 200, 'health still green');
});
