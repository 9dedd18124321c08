import { type IncomingMessage, request } from 'node:http';
import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';

/**
 * An AG-UI client that stops reading its stream (docs/protocol-doors.md): once more than
 * AGENTSVC_SOCKET_BUFFER_BYTES wait for it, its answer is ended, so what the service holds for it
 * stays bounded; the run is not stopped, and the other doors read it whole.
 */

const CAP = 65536;
const { app, model } = await buildWithModel(t, { AGENTSVC_SOCKET_BUFFER_BYTES: String(CAP) });

t.test('a client that pauses its socket has its stream cut; the run goes on', async (t) => {
  const { key } = await app.newUser();
  const sid = await createSession(app, key);
  const { seen } = await watch(app, sid, key);
  // 6 MiB of text: more than the loopback socket's kernel buffers take from a reader that reads nothing.
  const piece = 'x'.repeat(64 * 1024);
  const pieces = 96;
  model.script({ text: Array.from({ length: pieces }, () => piece) });

  const body = JSON.stringify({ threadId: sid, runId: 'r1', messages: [{ id: 'm1', role: 'user', content: 'flood me' }] });
  let text = '';
  let paused!: IncomingMessage;
  let how = '';
  const opened = new Promise<void>((resolve, reject) => {
    const req = request(`${app.url}/api/ag-ui/${sid}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
      t.equal(res.statusCode, 200);
      // Read the first chunk only, then stop reading: the socket is paused, its kernel buffers fill.
      res.setEncoding('utf8');
      res.on('end', () => (how ||= 'end'));
      res.on('error', (e) => (how ||= `error ${e.message}`));
      res.on('close', () => (how ||= 'close'));
      res.once('data', (d: string) => {
        text += d;
        res.pause();
        paused = res;
        resolve();
      });
    });
    req.on('error', reject);
    req.end(body);
  });
  await opened;

  // The run goes on to its end although nobody reads the AG-UI stream.
  await untilEnd(seen, sid, 30_000);
  t.match(seen.at(-1), { name: 'chat:end', payload: { session_id: sid, status: 'completed', finish_reason: 'stop' } }, 'the run was not stopped');

  // Now read what the service sent before it cut the stream: less than the run, no RUN_FINISHED.
  paused.on('data', (d: string) => void (text += d));
  paused.resume();
  await waitFor(() => how !== '', { what: 'the stream to end', timeoutMs: 20_000 });
  t.match(text, /^data: \{"type":"RUN_STARTED"/, 'the stream had started');
  t.notMatch(text, /RUN_FINISHED/, `the stream was cut before the run finished (${how}, ${text.length} of over ${pieces * piece.length} bytes)`);
  t.ok(text.length < pieces * piece.length, 'what it received is less than the run');

  // The other doors read the whole run: REST has the assistant turn with all of its text.
  const turns = await (await app.api(`/api/sessions/${sid}/messages`, { key })).json();
  t.equal(turns.at(-1).blocks.map((b: { content: string }) => b.content).join('').length, pieces * piece.length, 'the assistant turn holds all of the text');
});
