import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { aad, Keyring, keyId, open, parseKey, seal } from '../../src/features/model-keys/sealing.js';
import { maskKey } from '../../src/features/model-keys/service.js';

/** Sealing personal model keys (docs/model-keys.md): no service, no database. */

const KEY = Buffer.alloc(32, 7);
const SEAL_ERROR = { name: 'SealError' };
const SECRET = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';

function home(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-keys-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'secret.key');
}

t.test('a sealed key opens to itself, with a fresh 12-byte IV and a 16-byte tag each time', async (t) => {
  const a = seal(KEY, SECRET, aad('usr_1', 'gpt'));
  const b = seal(KEY, SECRET, aad('usr_1', 'gpt'));
  t.equal(a.version, 1);
  t.equal(a.key_id, keyId(KEY));
  t.equal(a.iv.length, 12);
  t.equal(a.tag.length, 16);
  t.notOk(a.iv.equals(b.iv), 'a new IV per seal');
  t.notOk(a.ciphertext.equals(b.ciphertext), 'so the same key seals to other bytes');
  t.notOk(a.ciphertext.toString('latin1').includes('abcdefghij'), 'the ciphertext does not hold the key');
  t.equal(open(KEY, a, aad('usr_1', 'gpt')), SECRET);
});

t.test('a changed byte, another row, or another key does not open', async (t) => {
  const s = seal(KEY, SECRET, aad('usr_1', 'gpt'));
  const flip = (b: Buffer, i = 0) => {
    const c = Buffer.from(b);
    c[i] ^= 1;
    return c;
  };
  t.throws(() => open(KEY, { ...s, ciphertext: flip(s.ciphertext, 5) }, aad('usr_1', 'gpt')), SEAL_ERROR, 'ciphertext changed');
  t.throws(() => open(KEY, { ...s, tag: flip(s.tag) }, aad('usr_1', 'gpt')), SEAL_ERROR, 'tag changed');
  t.throws(() => open(KEY, { ...s, iv: flip(s.iv) }, aad('usr_1', 'gpt')), SEAL_ERROR, 'IV changed');
  t.throws(() => open(KEY, s, aad('usr_2', 'gpt')), SEAL_ERROR, "another user's row");
  t.throws(() => open(KEY, s, aad('usr_1', 'other')), SEAL_ERROR, "another model's row");
  t.throws(() => open(Buffer.alloc(32, 8), s, aad('usr_1', 'gpt')), SEAL_ERROR, 'another key');
  t.throws(() => open(KEY, { ...s, tag: s.tag.subarray(0, 8) }, aad('usr_1', 'gpt')), SEAL_ERROR, 'a short tag is refused, not checked by its prefix');
  t.throws(() => open(KEY, { ...s, version: 2 }, aad('usr_1', 'gpt')), SEAL_ERROR, 'an unknown scheme');
});

t.test('AGENTSVC_SECRET_KEY: 32 bytes as hex or base64, else an error naming it', async (t) => {
  t.ok(parseKey('AGENTSVC_SECRET_KEY', KEY.toString('hex')).equals(KEY));
  t.ok(parseKey('AGENTSVC_SECRET_KEY', KEY.toString('base64')).equals(KEY));
  for (const bad of ['', 'short', KEY.toString('hex').slice(2), Buffer.alloc(16).toString('base64'), 'x'.repeat(64)]) {
    t.throws(() => parseKey('AGENTSVC_SECRET_KEY', bad), /^AGENTSVC_SECRET_KEY: must be 32 random bytes/, JSON.stringify(bad));
  }
  t.throws(() => new Keyring({ file: '/nonexistent/secret.key', current: 'nope' }), /AGENTSVC_SECRET_KEY: must be/);
});

t.test('without AGENTSVC_SECRET_KEY the key is generated into the home at 0600 on first use', async (t) => {
  const file = home(t);
  const ring = new Keyring({ file });
  t.throws(() => statSync(file), 'nothing is written before a key is sealed');
  const s = ring.seal(SECRET, aad('u', 'm'));
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.notOk(readFileSync(file, 'utf8').includes(SECRET));
  t.equal(new Keyring({ file }).open(s, aad('u', 'm')), SECRET, 'another process reading the file opens it');
});

t.test('with AGENTSVC_SECRET_KEY that key seals; PREVIOUS and the file still open', async (t) => {
  const file = home(t);
  const old = new Keyring({ file }).seal(SECRET, aad('u', 'm'));
  const env = new Keyring({ file, current: KEY.toString('base64') });
  t.ok(env.fromEnvironment);
  t.equal(env.seal(SECRET, aad('u', 'm')).key_id, keyId(KEY));
  t.equal(env.open(old, aad('u', 'm')), SECRET, "the file's key still opens what it sealed");
  const prev = Buffer.alloc(32, 9);
  const underPrev = seal(prev, SECRET, aad('u', 'm'));
  t.throws(() => env.open(underPrev, aad('u', 'm')), /which this install does not have/);
  t.equal(new Keyring({ file, current: KEY.toString('hex'), previous: prev.toString('hex') }).open(underPrev, aad('u', 'm')), SECRET);
});

t.test('a new file key seals; the old one opens until retired; another process sees both', async (t) => {
  const file = home(t);
  const ring = new Keyring({ file });
  const first = ring.seal(SECRET, aad('u', 'm'));
  const other = new Keyring({ file });
  const id = ring.addFileKey();
  t.not(id, first.key_id);
  const second = other.seal(SECRET, aad('u', 'm'));
  t.equal(second.key_id, id, 'a keyring that loaded the file before reads it again before sealing');
  t.equal(other.open(first, aad('u', 'm')), SECRET);
  t.same(ring.retire(new Set()), [first.key_id]);
  t.throws(() => new Keyring({ file }).open(first, aad('u', 'm')), /which this install does not have/);
  t.equal(new Keyring({ file }).open(second, aad('u', 'm')), SECRET);
  t.equal(statSync(file).mode & 0o777, 0o600, 'the rewritten file is 0600 too');
  t.throws(() => new Keyring({ file, current: KEY.toString('hex') }).addFileKey(), /AGENTSVC_SECRET_KEY is set/);
});

t.test('a damaged key file is an error naming it', async (t) => {
  const file = home(t);
  writeFileSync(file, 'garbage');
  t.throws(() => new Keyring({ file }), new RegExp(`${file}: not a key file`));
  writeFileSync(file, JSON.stringify({ format: 'agentsvc-secret-key', current: 'abc', keys: { abc: KEY.toString('base64') } }));
  t.throws(() => new Keyring({ file }), /does not match its id/);
});

t.test('the masked form shows the prefix and the last 4 characters, or nothing of a short key', async (t) => {
  t.equal(maskKey(SECRET), 'sk-****6789');
  t.equal(maskKey('short-key'), '****');
});
