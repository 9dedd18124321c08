import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

// examples/webhook-relay.mjs, as the README shows it: a run.waiting delivery verified and turned
// into a chat message (a stand-in for a Slack incoming webhook); a forged one refused.

const repo = resolve(import.meta.dirname, '../..');

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

t.test('the webhook relay example posts run.waiting to the chat and refuses a bad signature', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_WEBHOOK_ALLOW_PRIVATE: 'true', AGENTSVC_SCHEDULER_POLL_MS: '100' });
  const chat: string[] = [];
  const slack = http.createServer((req, res) => {
    let b = '';
    req.on('data', (c) => (b += c));
    req.on('end', () => {
      chat.push(JSON.parse(b).text);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => slack.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => slack.close(r)));
  const port = await freePort();
  const relayUrl = `http://127.0.0.1:${port}/`;
  const hook = await (await app.api('/api/webhooks', { method: 'POST', json: { url: relayUrl, events: ['run.waiting'] } })).json();
  const relay = spawn(process.execPath, [join(repo, 'examples', 'webhook-relay.mjs')], {
    cwd: repo,
    env: { ...process.env, PORT: String(port), WEBHOOK_SECRET: hook.secret, SLACK_WEBHOOK_URL: `http://127.0.0.1:${(slack.address() as AddressInfo).port}/`, AGENTSVC_URL: app.url },
    stdio: 'inherit',
  });
  t.teardown(() => void relay.kill('SIGKILL'));
  await waitFor(() => fetch(relayUrl, { method: 'POST', body: '{}' }).then((r) => r.status, () => null), { what: 'the relay listening' });
  t.equal((await fetch(relayUrl, { method: 'POST', body: '{}', headers: { 'webhook-id': 'msg_x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' } })).status, 401, 'a forged delivery is refused');

  const sid = await createSession(app, app.adminKey, { intent: 'Release 2.0' });
  const w = await watch(app, sid);
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Ship it on Friday?', options: [{ label: 'yes' }, { label: 'no' }] }] } }] });
  await request(w.sock, 'chat:send', { session_id: sid, message: 'go' });
  await untilEnd(w.seen, sid);
  await waitFor(() => chat.length === 1, { what: 'the chat message' });
  t.equal(chat[0], `*Release 2.0* waits for you:\n• question: Ship it on Friday?\n${app.url}/inbox`);
  // The relay posts to the chat before it answers 204, so the delivery is recorded a moment later.
  const log = await waitFor(async () => {
    const l = await (await app.api(`/api/webhooks/${hook.id}/deliveries`)).json();
    return l.items.length > 0 ? l : null;
  }, { what: 'the delivery recorded' });
  t.match(log.items, [{ event: 'run.waiting', status: 'delivered', response_status: 204 }]);
});
