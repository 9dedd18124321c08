// The streaming bench's baseline, in its own process: a bare Socket.IO relay. chat:send opens an
// openai SDK stream on the fake model and emits one turn:patch per text delta to the socket
// subscribed to that session, then chat:end. Nothing else: no database, no log, no turns.
// The client protocol is agentsvc's (session:subscribe, chat:send with acks), so the same load
// generator drives both. Prints {"url": ...} once listening.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { Server, type Socket } from 'socket.io';

const baseURL = process.argv[2];
const client = new OpenAI({ baseURL, apiKey: 'x', maxRetries: 0 });
const http = createServer();
const io = new Server(http, { path: '/socket.io/', serveClient: false });
const subscribers = new Map<string, Socket>();
let turns = 0;

io.on('connection', (socket) => {
  socket.on('session:subscribe', (p: { session_id: string }, ack: (r: unknown) => void) => {
    subscribers.set(p.session_id, socket);
    ack({ ok: true, session_id: p.session_id });
  });
  socket.on('chat:send', async (p: { session_id: string; message: string }, ack: (r: unknown) => void) => {
    const sid = p.session_id;
    const turnId = `turn_${++turns}`;
    ack({ ok: true, turn_id: turnId });
    let seq = 0;
    const out = subscribers.get(sid) ?? socket;
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: p.message }], stream: true });
    for await (const c of stream) {
      const text = c.choices[0]?.delta?.content;
      if (text) out.emit('turn:patch', { session_id: sid, seq: ++seq, turn_id: turnId, patch_type: 'add_content', data: { text_delta: text } });
    }
    out.emit('chat:end', { session_id: sid, seq: ++seq, status: 'completed', result: null, finish_reason: 'stop' });
  });
  socket.on('disconnect', () => {
    for (const [sid, s] of subscribers) if (s === socket) subscribers.delete(sid);
  });
});

http.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` })));
process.on('SIGTERM', () => process.exit(0));
