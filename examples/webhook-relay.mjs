// A webhook receiver: verifies the Standard Webhooks signature, turns run.waiting into a chat message.
// WEBHOOK_SECRET=whsec_... SLACK_WEBHOOK_URL=https://hooks.slack.com/services/... node examples/webhook-relay.mjs
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

const hook = new Webhook(process.env.WEBHOOK_SECRET);
const console_ = process.env.AGENTSVC_URL ?? 'http://127.0.0.1:8080';

http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', async () => {
    let event;
    try {
      event = hook.verify(body, req.headers); // throws on a bad signature or a stale timestamp
    } catch {
      return res.writeHead(401).end();
    }
    if (event.type === 'run.waiting') {
      const { session_id, session_intent, waiting } = event.data;
      const asks = waiting.map((w) => `• ${w.kind}: ${w.preview}`).join('\n');
      const text = `*${session_intent || session_id}* waits for you:\n${asks}\n${console_}/inbox`;
      const r = await fetch(process.env.SLACK_WEBHOOK_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
      if (!r.ok) return res.writeHead(502).end(); // agentsvc retries: delivery is at least once
    }
    res.writeHead(204).end();
  });
}).listen(Number(process.env.PORT ?? 8787));
