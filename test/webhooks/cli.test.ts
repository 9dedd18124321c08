import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { buildWithModel } from '../helpers/chat.js';
import { cli, hasStack } from '../terminal/helpers.js';
import { receiver } from './receiver.js';

// `agentsvc webhooks` (docs/cli.md, docs/webhooks.md): the built CLI against a started service:
// create prints the secret once, list shows the state, test sends a signed delivery (exit 1 when
// it fails), deliveries shows the log, disable/enable and delete.

t.test('agentsvc webhooks create / list / test / deliveries / disable / enable / delete', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_WEBHOOK_ALLOW_PRIVATE: 'true' });
  let answer = 204;
  const { got, url } = await receiver(t, () => answer);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };

  const created = await cli(['webhooks', 'create', url, '--event', 'run.waiting', '--event', 'budget.warning,budget.exceeded', '--description', 'ops'], env);
  t.equal(created.code, 0, created.stderr);
  const [secret, note] = created.stdout.trim().split('\n');
  t.match(secret, /^whsec_[A-Za-z0-9+/=]{40,}$/, 'the secret, alone on the first line');
  const said = new RegExp(`^\\(webhook wh_\\w+ for run\\.waiting, budget\\.warning, budget\\.exceeded to ${url.replace(/[.]/g, '\\.')}; the secret above signs its deliveries and is shown only once\\)$`);
  t.match(note, said, 'the second line names the webhook');
  const id = /webhook (wh_\S+) for /.exec(note)?.[1];

  // Independent calls in parallel: each CLI start costs a second or more on a loaded machine.
  const [list, listJson, ok] = await Promise.all([cli(['webhooks', 'list'], env), cli(['webhooks', 'list', '--json'], env), cli(['webhooks', 'test', id!], env)]);
  t.equal(list.code, 0, list.stderr);
  const rows = list.stdout.trim().split('\n');
  t.match(rows[0], /^ID +STATE +SCOPE +EVENTS +URL$/);
  t.match(rows[1], new RegExp(`^${id} +enabled +user +run\\.waiting,budget\\.warning,budget\\.exceeded +${url.replace(/[.]/g, '\\.')}$`));
  t.notOk(list.stdout.includes(secret.slice(6)), 'list never shows the secret');
  t.match(JSON.parse(listJson.stdout), [{ id, url, events: ['run.waiting', 'budget.warning', 'budget.exceeded'], description: 'ops', enabled: true, secret: `whsec_…${secret.slice(-4)}` }]);

  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout.trim(), /^delivered: HTTP 204 \(msg_\S+\)$/);
  t.equal(got.length, 1);
  t.match(new Webhook(secret).verify(got[0].body, got[0].headers), { type: 'webhook.test', data: { webhook_id: id } }, 'signed with the printed secret');

  answer = 500;
  const bad = await cli(['webhooks', 'test', id!], env);
  t.equal(bad.code, 1);
  t.equal(bad.stderr.trim(), 'agentsvc: the test delivery failed: HTTP 500');
  t.equal(bad.stdout, '');

  const [log, logJson] = await Promise.all([cli(['webhooks', 'deliveries', id!], env), cli(['webhooks', 'deliveries', id!, '--limit', '1', '--json'], env)]);
  t.equal(log.code, 0, log.stderr);
  const lines = log.stdout.trim().split('\n');
  t.equal(lines.length, 3, 'a header and two attempts');
  t.match(lines[0], /^AT \(UTC\) +EVENT +STATUS +HTTP +ATTEMPT +DELIVERY +ERROR$/);
  t.match(lines[1], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +webhook\.test +failed +500 +1 +msg_\S+ +HTTP 500$/, 'newest first');
  t.match(lines[2], /^\S+ \S+ +webhook\.test +delivered +204 +1 +msg_\S+$/);
  t.match(JSON.parse(logJson.stdout), { total: 2, items: [{ status: 'failed', response_status: 500 }] });

  const off = await cli(['webhooks', 'disable', id!], env);
  t.equal(off.stdout.trim(), `${id}: disabled`);
  t.match((await (await app.api(`/api/webhooks/${id}`)).json()).enabled, false);
  t.equal((await cli(['webhooks', 'enable', id!], env)).stdout.trim(), `${id}: enabled`);

  // Bad input: one line from the service's error body, exit 1, no stack.
  const [refused, unknown, missing, noYes, help] = await Promise.all([
    cli(['webhooks', 'create', 'ftp://example.com/x', '--event', 'run.failed'], env),
    cli(['webhooks', 'create', url, '--event', 'run.exploded'], env),
    cli(['webhooks', 'deliveries', 'wh_nope'], env),
    cli(['webhooks', 'delete', id!], env),
    cli(['help', 'webhooks']),
  ]);
  for (const c of ['list', 'create', 'test', 'deliveries', 'disable', 'enable', 'delete']) t.match(help.stdout, new RegExp(`webhooks ${c}\\s+\\S`), `help lists webhooks ${c}`);
  t.equal(refused.code, 1);
  t.match(refused.stderr.trim(), /^agentsvc: body\.url: .* \(422\)$/);
  t.equal(unknown.code, 1);
  t.match(unknown.stderr.trim(), /^agentsvc: body\.events\.0: .*\(422\)$/);
  t.equal(missing.code, 1);
  t.equal(missing.stderr.trim(), 'agentsvc: webhook wh_nope not found');
  for (const r of [refused, unknown, missing]) t.notOk(hasStack(r.stderr));

  t.equal(noYes.code, 1, 'not a terminal: refused without --yes');
  t.match(noYes.stderr, /pass --yes/);
  const del = await cli(['webhooks', 'delete', id!, '--yes'], env);
  t.equal(del.code, 0, del.stderr);
  t.equal(del.stdout.trim(), `deleted ${id}`);
  t.equal((await cli(['webhooks', 'list'], env)).stdout.trim(), 'no webhooks');
  t.equal((await app.api(`/api/webhooks/${id}`)).status, 404);
});
