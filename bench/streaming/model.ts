// The streaming bench's fake model, in its own process: an OpenAI-compatible Chat Completions
// endpoint that streams real SSE chunks in the shape of test/fixtures/fake-model.ts. A user message
// `bench <N> <intervalMs> <tag>` gets N text deltas `<tag>.<i>@<t> `, t being the wall-clock ms at
// which the chunk is written, so a client in another process measures its latency from the text
// alone. Paced deltas keep an absolute schedule (delta i at start + i x interval: the offered rate
// holds whatever the timers' lateness); interval 0 writes all N at once (a burst).
// Prints {"baseUrl": ...} once listening.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const clock = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function frame(model: string, delta: object, finish: string | null = null) {
  return `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

function lastUserText(body: { messages?: { role: string; content: unknown }[] }): string {
  const m = [...(body.messages ?? [])].reverse().find((x) => x.role === 'user');
  if (!m) return '';
  return typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? m.content.map((p: { text?: string }) => p.text ?? '').join('') : '';
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  let raw = '';
  for await (const c of req) raw += c;
  if (req.method === 'GET' && req.url?.endsWith('/models')) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model' }] }));
    return;
  }
  if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
    res.writeHead(404).end();
    return;
  }
  const body = JSON.parse(raw);
  const said = lastUserText(body).trim();
  // `soak <N> <intervalMs> <tag>` (bench/soak.ts): a Write tool call first, then N deltas.
  const soak = /^soak (\d+) (\d+(?:\.\d+)?) (\S+)$/.exec(said);
  if (soak && body.stream && body.messages?.at(-1)?.role !== 'tool') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const call = { index: 0, id: `call_${soak[3]}_${Date.now()}`, type: 'function', function: { name: 'Write', arguments: JSON.stringify({ file_path: `soak-${soak[3]}.txt`, content: `${said} ${Date.now()}\n` }) } };
    res.write(frame(body.model, { role: 'assistant', content: null, tool_calls: [call] }));
    res.write(frame(body.model, {}, 'tool_calls'));
    res.end('data: [DONE]\n\n');
    return;
  }
  const m = /^(?:bench|soak) (\d+) (\d+(?:\.\d+)?) (\S+)$/.exec(said);
  if (!body.stream) {
    // Titles, summaries and other completions the service may ask for: a short answer.
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.write(frame(body.model, { role: 'assistant', content: '' }));
  const n = m ? Number(m[1]) : 1;
  const interval = m ? Number(m[2]) : 0;
  const tag = m ? m[3] : 'x';
  const start = clock();
  for (let i = 0; i < n; i++) {
    if (interval) {
      const wait = start + i * interval - clock();
      if (wait > 0) await sleep(wait);
    }
    if (res.destroyed) return;
    res.write(frame(body.model, { content: m ? `${tag}.${i}@${clock().toFixed(3)} ` : 'ok' }));
  }
  res.write(frame(body.model, {}, 'stop'));
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: body.model, choices: [], usage: { prompt_tokens: 10, completion_tokens: n, total_tokens: 10 + n } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

const server = createServer((req, res) => {
  handle(req, res).catch(() => res.destroy());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }));
});
process.on('SIGTERM', () => process.exit(0));
