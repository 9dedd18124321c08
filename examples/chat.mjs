#!/usr/bin/env node
// The standard flow of docs/socket-protocol.md: create a session over REST, subscribe to it over
// Socket.IO, send a message, print the answer as it streams, exit when the chat ends.
// Usage: AGENTSVC_URL=http://127.0.0.1:8080 AGENTSVC_KEY=sk-... node examples/chat.mjs "hello"
import { io } from 'socket.io-client';

const url = process.env.AGENTSVC_URL ?? 'http://127.0.0.1:8080';
const key = process.env.AGENTSVC_KEY;
const message = process.argv[2] ?? 'Hello!';
if (!key) {
  console.error('set AGENTSVC_KEY to an API key (agentsvc keys create --name example)');
  process.exit(2);
}

// 1. A session (REST).
const res = await fetch(`${url}/api/sessions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ intent: 'example' }),
});
if (!res.ok) throw new Error(`create session: ${res.status} ${await res.text()}`);
const { session_id } = await res.json();
console.error(`session ${session_id}`);

// 2. The socket, with the same key.
const socket = io(url, { auth: { token: key }, transports: ['websocket'] });
const ack = (event, payload) =>
  new Promise((resolve, reject) =>
    socket.emit(event, payload, (a) => (a.ok ? resolve(a) : reject(new Error(`${event}: ${a.error.code} ${a.error.message}`)))),
  );
socket.on('connect_error', (e) => {
  console.error(`connect_error: ${e.data?.code ?? e.message}`);
  process.exit(1);
});

// 3. Print text deltas of the main conversation; stop at chat:end.
const subAgentTurns = new Set();
socket.on('turn:start', (e) => e.parent_fork_tool_call_id && subAgentTurns.add(e.turn_id));
socket.on('turn:patch', (e) => {
  if (subAgentTurns.has(e.turn_id)) return;
  if (e.patch_type === 'add_content') process.stdout.write(e.data.text_delta);
  if (e.patch_type === 'add_tool_call') console.error(`\n[tool ${e.data.tool_name}]`);
});
socket.on('system:error', (e) => console.error(`\nerror ${e.code}: ${e.message}`));
const ended = new Promise((resolve) => socket.on('chat:end', resolve));

await new Promise((resolve) => socket.once('connect', resolve));
await ack('session:subscribe', { session_id });
const { turn_id } = await ack('chat:send', { session_id, message });
console.error(`sent as ${turn_id}`);
const end = await ended;
process.stdout.write('\n');
console.error(`chat:end ${end.status} (${end.finish_reason}), last seq ${end.seq}`);
socket.close();
process.exit(end.status === 'completed' ? 0 : 1);
