import { copyFileSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { assertFreshBuild, cli } from '../appliance/cli-helpers.js';
import { record, subscribe, untilEnd } from '../helpers/chat.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { apiOf, modelEnv, socketTo, tempHome } from '../helpers/nodes.js';
import { request } from '../helpers/socket.js';
import { type FakeModel, startFakeModel } from '../fixtures/fake-model.js';
import { loadConfig } from '../../src/platform/config/index.js';
import { startService } from '../../src/service.js';

/**
 * Personal model keys in a backup (docs/model-keys.md): the archive holds them sealed, never in
 * clear, and not the secret key; a restore without the key file keeps them but cannot open them
 * (a `required` model is refused, saying so); with the key file copied over they work again,
 * without a restart. The service's log never holds a key.
 */
t.setTimeout(300_000);
assertFreshBuild();

const PERSONAL = 'sk-personal-backup-0123456789abcdef';
const MODELS = JSON.stringify([{ id: 'fake-model', personal_key: 'required' }]);

type T = { teardown(fn: () => unknown): void };

/** The service in this process on `home` and `db`, logging to its home as `up` does. */
async function start(t: T, model: FakeModel, home: string, db: string) {
  const service = await startService(loadConfig({ env: { ...modelEnv(model), AGENTSVC_MODELS: MODELS, AGENTSVC_HOME: home, AGENTSVC_PORT: '0', DATABASE_URL: db } }));
  let closed = false;
  const close = async () => {
    if (!closed) await service.close();
    closed = true;
  };
  t.teardown(close);
  const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  return { api: apiOf(service.url, key), socket: () => socketTo(t, service.url, key), close };
}

async function chat(n: { socket: () => ReturnType<typeof socketTo> }, sid: string, message: string) {
  const sock = await n.socket();
  const seen = record(sock);
  await subscribe(sock, sid);
  const ack = await request(sock, 'chat:send', { session_id: sid, message });
  if (!ack.ok) return { ack, end: null };
  const end = (await untilEnd(seen, sid, 30_000)).find((e) => e.name === 'chat:end')?.payload;
  return { ack, end };
}

t.test('backup keeps personal keys sealed; restore needs the secret key file to open them', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  model.apiKey = PERSONAL;
  const [dbA, dbB] = [await freshDatabaseUrl(t), await freshDatabaseUrl(t)];
  const home = tempHome(t);
  const up = await start(t, model, home, dbA);
  const put = await up.api('/api/me/credentials/fake-model', { method: 'PUT', json: { api_key: PERSONAL } });
  t.equal(put.status, 200, await put.text());
  const { session_id: sid } = (await (await up.api('/api/sessions', { method: 'POST', json: {} })).json()) as { session_id: string };
  t.match((await chat(up, sid, 'before')).end, { status: 'completed' }, 'the personal key answers before the backup');

  const archive = join(home, '..', `${home.split('/').pop()}.tar`);
  t.teardown(() => rmSync(archive, { force: true }));
  const b = cli(['backup', '-o', archive, '--json'], { AGENTSVC_HOME: home, DATABASE_URL: dbA });
  t.equal(b.code, 0, b.stderr);
  t.equal(JSON.parse(b.stdout).rows.model_credentials, 1, 'the sealed key is in the archive');
  t.match(b.stderr, /the archive holds 1 personal model key\(s\), encrypted; the secret key .* is not in it/, 'backup says the key file must be kept apart');
  const tar = readFileSync(archive);
  t.notOk(tar.includes(PERSONAL), 'the archive never holds the key in clear');
  t.notOk(tar.includes(readFileSync(join(home, 'secret.key'))), 'nor the secret key file');

  const into = tempHome(t);
  const r = cli(['restore', archive, '--home', into], { DATABASE_URL: dbB });
  t.equal(r.code, 0, r.stderr);
  t.notOk(existsSync(join(into, 'secret.key')), 'the restore brings no secret key');
  const restored = await start(t, model, into, dbB);
  t.match(await (await restored.api('/api/me/credentials/fake-model')).json(), { set: true, masked: 'sk-****cdef', readable: false }, 'kept, but this install cannot open it');
  const calls = model.requests.length;
  const refused = await chat(restored, sid, 'without the key file');
  t.match(refused.ack, { ok: false, error: { code: 'MODEL_CREDENTIAL_MISSING', message: /cannot be decrypted by this install.*set it again/ } });
  t.equal(model.requests.length, calls, 'the model was not called');

  copyFileSync(join(home, 'secret.key'), join(into, 'secret.key'));
  t.equal(statSync(join(into, 'secret.key')).mode & 0o777, 0o600, 'copied with its mode');
  t.match(await (await restored.api('/api/me/credentials/fake-model')).json(), { readable: true }, 'opens once the key file is there, no restart');
  t.match((await chat(restored, sid, 'with the key file')).end, { status: 'completed' }, 'and the restored key answers');
  t.equal(model.requests.length, calls + 1);

  await restored.close();
  await up.close();
  for (const h of [home, into]) {
    const log = join(h, 'logs', 'agentsvc.log');
    t.ok(existsSync(log), `${log} written`);
    t.notOk(readFileSync(log, 'utf8').includes(PERSONAL), `the log of ${h === home ? 'the source' : 'the restored'} install never holds the key`);
  }
});
