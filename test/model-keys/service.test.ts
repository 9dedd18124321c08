import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { aad, Keyring } from '../../src/features/model-keys/sealing.js';
import { ModelKeys } from '../../src/features/model-keys/service.js';
import type { ModelEntry } from '../../src/platform/config/models.js';

/**
 * The model.credentials step and the run.before refusal, on rows given by hand (no database):
 * a `required` model is never called with the install's key, whatever path the call took.
 */

const entry = (id: string, personalKey?: 'allowed' | 'required', fallback: string[] = []): ModelEntry => ({
  id,
  baseUrl: 'http://127.0.0.1:1/v1',
  apiKey: 'install',
  contextWindow: 128000,
  price: null,
  fallback,
  ...(personalKey ? { personalKey } : {}),
});

function keysWith(t: { teardown(fn: () => unknown): void }, rows: (keyring: Keyring) => object[]) {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-keys-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const keyring = new Keyring({ file: join(dir, 'secret.key') });
  const stored = rows(keyring);
  const warned: object[] = [];
  const keys = new ModelKeys({
    // The store's one query here: a user's rows among some model ids.
    db: { sql: async (_q: string, [user, ids]: [string, string[]]) => stored.filter((r) => (r as { user_id: string }).user_id === user && ids.includes((r as { model_id: string }).model_id)) } as never,
    config: { model: { entries: [entry('req', 'required', ['open', 'plain', 'req2']), entry('open', 'allowed'), entry('plain'), entry('req2', 'required')], default: 'req' } as never },
    keyring,
    audit: { add: async () => {} },
    logger: { error: () => {}, warn: (o) => void warned.push(o), info: () => {} },
  });
  return { keys, warned };
}

const row = (keyring: Keyring, user: string, model: string, key: string) => ({ user_id: user, model_id: model, masked: '****', created_at: new Date(), updated_at: new Date(), ...keyring.seal(key, aad(user, model)) });

t.test('a run gets its user keys for the model and its fallbacks that take one', async (t) => {
  const { keys } = keysWith(t, (k) => [row(k, 'u', 'req', 'sk-req'), row(k, 'u', 'open', 'sk-open')]);
  t.same([...((await keys.forRun('run1', 'u', 'req')) ?? [])], [
    ['req', 'sk-req'],
    ['open', 'sk-open'],
  ]);
  t.equal(await keys.refusal('u', null), undefined, 'the default model is required, and the user has a key');
});

t.test('a required model without a usable key: refused before the run, and never called with the install key', async (t) => {
  const { keys, warned } = keysWith(t, (k) => [{ ...row(k, 'someone-else', 'req', 'sk-req'), user_id: 'u' }]);
  t.match(await keys.refusal('v', 'req'), { action: 'refuse', code: 'MODEL_CREDENTIAL_MISSING', status: 403, message: /model req runs only with your own API key, and you have none/ });
  t.match(await keys.refusal('u', 'req'), { code: 'MODEL_CREDENTIAL_MISSING', message: /cannot be decrypted by this install/ }, "another user's sealed key copied onto u's row does not open");
  await t.rejects(keys.forRun('run2', 'u', 'req'), { code: 'MODEL_ERROR', message: /model req runs only with your own API key/ }, 'the model call itself stops');
  t.match(warned, [{ user_id: 'u', model: 'req', reason: /does not open/ }], 'logged without the key');
  t.notOk(JSON.stringify(warned).includes('sk-req'));
  t.equal(await keys.refusal('u', 'open'), undefined, 'an allowed model is never refused');
  t.equal(await keys.forRun('run3', 'u', 'open'), undefined, 'an allowed model without a key: the install key');
});

t.test('a model that takes no personal key is neither refused nor given one', async (t) => {
  const { keys } = keysWith(t, () => []);
  t.equal(await keys.refusal('u', 'plain'), undefined);
  t.equal(await keys.forRun('run4', 'u', 'plain'), undefined);
  t.same(keys.models(), [
    { id: 'req', personal_key: 'required' },
    { id: 'open', personal_key: 'allowed' },
    { id: 'req2', personal_key: 'required' },
  ]);
});
