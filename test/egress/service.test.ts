import t from 'tap';
import http from 'node:http';
import { buildWithModel, createSession } from '../helpers/chat.js';
import { chat } from '../plugins/helpers.js';
import { needs } from '../helpers/needs.js';

// End to end (docs/policy-network.md): with AGENTSVC_RUNNER_NETWORK, an agent's Bash call reaches
// an allowed host through the service's egress proxy; a denied one is refused, and the refusal is
// in GET /api/audit with the run's session and the Bash call's id. Local runner; the "hosts" are
// loopback test servers, reachable only because the operator allowed private addresses (curl's
// --noproxy '' overrides NO_PROXY, which keeps the sandbox's own loopback off the proxy).


async function server(host: string): Promise<number> {
  const s = http.createServer((_req, res) => res.end(`hello from ${host}\n`));
  await new Promise<void>((r) => s.listen(0, host, r));
  t.teardown(() => s.close());
  return (s.address() as { port: number }).port;
}

t.test('a Bash call through the egress proxy, and its audited refusal', async (t) => {
  const open = await server('127.0.0.1');
  const closed = await server('127.0.0.2');
  const policy = { rules: [{ tool: 'network', pattern: '127.0.0.2', action: 'deny' }] };
  const { app, model } = await buildWithModel(t, { AGENTSVC_RUNNER_NETWORK: 'true', AGENTSVC_WEBFETCH_ALLOW_PRIVATE: 'true', AGENTSVC_POLICY: JSON.stringify(policy) });
  const summary = JSON.stringify(await app.service.runner.check());
  if (!/network only through the egress proxy/.test(summary)) {
    needs(t, 'the local runner confining with network', summary);
    return;
  }

  const sid = await createSession(app);
  const { results } = await chat(
    app,
    model,
    sid,
    'fetch both',
    { toolCalls: [{ name: 'Bash', args: { command: `curl -sS -m 10 --noproxy '' http://127.0.0.1:${open}/` } }] },
    { toolCalls: [{ name: 'Bash', args: { command: `curl -sS -f -m 10 --noproxy '' http://127.0.0.2:${closed}/` } }] },
    { text: ['done'] },
  );
  t.match(results[0], { status: 'done', result: 'hello from 127.0.0.1' }, 'allowed host reached through the proxy');
  t.match(results[1], { status: 'error', result: /403/ }, 'denied host refused');
  t.notMatch(results[1].result, /hello/);
  const calls = (await (await app.api(`/api/sessions/${sid}/messages`)).json()).flatMap((m: { tool_calls?: { id: string }[] }) => m.tool_calls ?? []);
  const audit = await (await app.api(`/api/audit?session_id=${sid}&action=denied`)).json();
  t.equal(audit.total, 1);
  t.match(audit.items[0], {
    session_id: sid,
    tool_call_id: calls[1].id,
    tool_name: 'network',
    arguments: JSON.stringify({ host: '127.0.0.2', port: closed }),
    action: 'denied',
    rule: { tool: 'network', pattern: '127.0.0.2', action: 'deny' },
    source: 'install',
    decided_by: 'policy',
  });
});
