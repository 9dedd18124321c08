import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { assertFreshBuild, cli } from '../appliance/cli-helpers.js';
import { build, type TestApp } from '../helpers/app.js';
import { keyId } from '../../src/features/model-keys/sealing.js';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Personal model keys (docs/model-keys.md): stored sealed through REST and never answered, audited,
 * used for the user's own calls (the fake model checks the Authorization header), a `required`
 * model refused before the model is called, usage saying which credential paid, and
 * `agentsvc secrets rotate` keeping every key usable.
 */
t.setTimeout(120_000);

const PERSONAL = 'sk-personal-0123456789abcdefghij';
const OTHER = 'sk-personal-replaced-ABCDEFGHIJKLMNOP';
/** fake-model (the default) requires a personal key, open-model allows one, plain-model takes none. */
const MODELS = JSON.stringify([{ id: 'fake-model', personal_key: 'required' }, { id: 'open-model', personal_key: 'allowed' }, { id: 'plain-model' }]);

const body = async (r: Response) => ({ status: r.status, text: await r.text() });

async function usageBy(app: TestApp, key: string) {
  const r = await app.api('/api/usage?group_by=credential', { key });
  return ((await r.json()) as { items: { key: string; calls: number }[] }).items.map((i) => [i.key, i.calls]);
}

t.test('REST stores a key sealed and masked, never answers or audits it', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS });
  const alice = await app.newUser('alice');
  const bob = await app.newUser('bob');
  const put = (model: string, json: unknown, key = alice.key) => app.api(`/api/me/credentials/${model}`, { method: 'PUT', json, key });

  const set = await body(await put('fake-model', { api_key: PERSONAL }));
  t.equal(set.status, 200, set.text);
  t.notOk(set.text.includes(PERSONAL), 'the PUT answer does not carry the key');
  const c = JSON.parse(set.text);
  t.match(c, { model_id: 'fake-model', personal_key: 'required', set: true, masked: 'sk-****ghij', readable: true, key_id: /^[0-9a-f]{16}$/ });
  t.equal(statSync(join(app.home, 'secret.key')).mode & 0o777, 0o600, 'the secret key was generated into the home at 0600');

  const list = await body(await app.api('/api/me/credentials', { key: alice.key }));
  t.notOk(list.text.includes(PERSONAL), 'the list does not carry it');
  t.same(
    JSON.parse(list.text).items.map((i: { model_id: string; set: boolean; masked: string | null }) => [i.model_id, i.set, i.masked]),
    [
      ['fake-model', true, 'sk-****ghij'],
      ['open-model', false, null],
    ],
    'every model that takes a personal key, and only those',
  );
  const one = await body(await app.api('/api/me/credentials/fake-model', { key: alice.key }));
  t.notOk(one.text.includes(PERSONAL));
  t.equal(JSON.parse(one.text).masked, 'sk-****ghij');
  t.equal(JSON.parse((await body(await app.api('/api/me/credentials/fake-model', { key: bob.key }))).text).set, false, "bob does not see alice's key");

  const [row] = await app.service.db.sql<{ all: string }>('select row_to_json(c)::text as all from model_credentials c where user_id = ?', [alice.userId]);
  t.notOk(row.all.includes(PERSONAL) || row.all.includes('0123456789abcdefghij'), 'no column of the stored row holds the key');

  t.equal((await put('fake-model', { api_key: OTHER })).status, 200, 'replaced');
  t.equal(JSON.parse((await body(await app.api('/api/me/credentials/fake-model', { key: alice.key }))).text).masked, 'sk-****MNOP');

  for (const [model, json, status, what] of [
    ['fake-model', { api_key: 'has a space in it' }, 422, 'a key with spaces'],
    ['fake-model', { api_key: 'line\nbreak-injected-header' }, 422, 'a key with a line break (header injection)'],
    ['fake-model', { api_key: '' }, 422, 'an empty key'],
    ['fake-model', { api_key: PERSONAL, extra: 1 }, 422, 'an unknown field'],
    ['fake-model', { key: PERSONAL }, 422, 'no api_key'],
    ['plain-model', { api_key: PERSONAL }, 422, 'a model without personal_key'],
    ['nope', { api_key: PERSONAL }, 404, 'an unknown model'],
  ] as const) {
    const r = await body(await put(model, json));
    t.equal(r.status, status, `${what}: ${r.text}`);
    t.match(JSON.parse(r.text), { code: status === 404 ? 'NOT_FOUND' : 'VALIDATION_ERROR' });
    t.notOk(r.text.includes(PERSONAL), `${what}: the error does not echo the key`);
  }
  t.equal((await put('fake-model', { api_key: PERSONAL }, '')).status, 401, 'no key, no entry');

  t.equal((await app.api('/api/me/credentials/fake-model', { method: 'DELETE', key: alice.key })).status, 204);
  t.equal((await app.api('/api/me/credentials/fake-model', { method: 'DELETE', key: alice.key })).status, 404, 'gone');

  const audit = await body(await app.api('/api/audit?action=credential_set', { key: alice.key }));
  t.equal(audit.status, 200, audit.text);
  t.notOk(audit.text.includes(PERSONAL) || audit.text.includes(OTHER), 'the audit holds no key');
  const changes = JSON.parse(audit.text).items.map((i: { arguments: string; user_id: string; decided_by: string; tool_name: string }) => ({ ...JSON.parse(i.arguments), user: i.user_id, by: i.decided_by, tool: i.tool_name }));
  t.match(
    changes,
    ['deleted', 'replaced', 'created'].map((change) => ({ change, model_id: 'fake-model', key_id: /^[0-9a-f]{16}$/, user: alice.userId, by: alice.userId, tool: 'model_credential' })),
    'created, replaced and deleted, newest first',
  );
  t.equal(changes.length, 3);
});

t.test('runs: a required model refused before the model is called, the personal key sent, usage says who paid, rotation keeps it working', async (t) => {
  assertFreshBuild();
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS });
  const alice = await app.newUser('alice');
  const sid = await createSession(app, alice.key);
  const w = await watch(app, sid, alice.key);

  // Without her key, fake-model (required) is refused by chat:send itself.
  model.apiKey = 'test';
  const refused = await request(w.sock, 'chat:send', { session_id: sid, message: 'hi' });
  t.match(refused, { ok: false, error: { code: 'MODEL_CREDENTIAL_MISSING', message: /model fake-model runs only with your own API key.*PUT \/api\/me\/credentials\/fake-model/ } });
  t.equal(model.requests.length, 0, 'the model was not called');
  t.equal((await app.api(`/api/sessions/${sid}`, { key: alice.key }).then((r) => r.json())).status, 'created', 'nothing started');

  // With it, the model sees her key: the fake answers 401 to any other.
  t.equal((await app.api('/api/me/credentials/fake-model', { method: 'PUT', json: { api_key: PERSONAL }, key: alice.key })).status, 200);
  model.apiKey = PERSONAL;
  t.match(await request(w.sock, 'chat:send', { session_id: sid, message: 'hi' }), { ok: true });
  const ended = await untilEnd(w.seen, sid);
  t.match(ended.find((e) => e.name === 'chat:end')?.payload, { status: 'completed' }, 'answered with the personal key');
  t.equal(model.requests.length, 1);
  await waitFor(async () => (await usageBy(app, alice.key)).length === 1, { timeoutMs: 10_000 });
  t.same(await usageBy(app, alice.key), [['personal', 1]], 'the usage record says the personal key paid');

  // bob on open-model (allowed) without a key: the install's key pays.
  const bob = await app.newUser('bob');
  const bsid = await createSession(app, bob.key, { model: 'open-model' });
  const bw = await watch(app, bsid, bob.key);
  model.apiKey = 'test';
  t.match(await request(bw.sock, 'chat:send', { session_id: bsid, message: 'hi' }), { ok: true });
  t.match((await untilEnd(bw.seen, bsid)).find((e) => e.name === 'chat:end')?.payload, { status: 'completed' }, 'answered with the install key');
  await waitFor(async () => (await usageBy(app, bob.key)).length === 1, { timeoutMs: 10_000 });
  t.same(await usageBy(app, bob.key), [['install', 1]]);

  // Rotation (the CLI, beside the running service): a new key, the old one gone, the key still used.
  const before = JSON.parse(readFileSync(join(app.home, 'secret.key'), 'utf8'));
  const env = { AGENTSVC_HOME: app.home, DATABASE_URL: app.config.databaseUrl!, AGENTSVC_MODELS: MODELS, OPENAI_API_KEY: 'test' };
  const r = cli(['secrets', 'rotate', '--json'], env);
  t.equal(r.code, 0, r.stderr);
  const rotated = JSON.parse(r.stdout);
  t.match(rotated, { resealed: 1, unreadable: 0, retired: [before.current] });
  t.not(rotated.key_id, before.current);
  const after = JSON.parse(readFileSync(join(app.home, 'secret.key'), 'utf8'));
  t.same(Object.keys(after.keys), [rotated.key_id], 'only the new key is left in secret.key');
  t.equal(statSync(join(app.home, 'secret.key')).mode & 0o777, 0o600);
  t.equal((await app.api('/api/me/credentials/fake-model', { key: alice.key }).then((x) => x.json())).key_id, rotated.key_id, 'the stored key is sealed under the new key');
  model.apiKey = PERSONAL;
  t.match(await request(w.sock, 'chat:send', { session_id: sid, message: 'again' }), { ok: true });
  t.match((await untilEnd(w.seen, sid, 20_000, 2)).filter((e) => e.name === 'chat:end')[1]?.payload, { status: 'completed' }, 'the running service opens it with the new key');
  const audit = await app.api('/api/audit?action=credential_set', { key: alice.key }).then((x) => x.json());
  t.match(JSON.parse(audit.items[0].arguments), { change: 'rotated', model_id: 'fake-model', key_id: rotated.key_id });
  t.equal(audit.items[0].decided_by, 'secrets rotate');
});

t.test('AGENTSVC_SECRET_KEY encrypts instead of a generated file, is shown masked, and a malformed one stops the start', async (t) => {
  const secret = Buffer.alloc(32, 42);
  const { app } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS, AGENTSVC_SECRET_KEY: secret.toString('base64') });
  const put = await app.api('/api/me/credentials/open-model', { method: 'PUT', json: { api_key: PERSONAL } });
  t.equal(put.status, 200);
  t.equal((await put.json()).key_id, keyId(secret), 'sealed under the configured key');
  t.notOk(existsSync(join(app.home, 'secret.key')), 'no key file generated');
  const env = (await (await app.api('/api/env')).json()) as { items: { env_var: string; value: string }[] }[];
  t.equal(env.flatMap((g) => g.items).find((i) => i.env_var === 'AGENTSVC_SECRET_KEY')?.value, '****', 'GET /api/env masks it');
  await t.rejects(build(t, { AGENTSVC_SECRET_KEY: 'not-a-key' }), /^AGENTSVC_SECRET_KEY: must be 32 random bytes/, 'a malformed key stops the start, naming the setting');
});

