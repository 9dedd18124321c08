/**
 * Sealing personal model keys at rest (docs/model-keys.md): AES-256-GCM from Node's own crypto
 * (OpenSSL), a fresh random 12-byte IV per seal, the 16-byte tag checked on open, and additional
 * data binding a ciphertext to its row (user and model), so a row's sealed key copied onto another
 * row does not open. What is written by hand here is only the keyring: which keys exist, which
 * one seals, and the key file in the home; the cipher is the library's.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';

/** The scheme of a sealed value: 1 is AES-256-GCM, 12-byte IV, 16-byte tag, AAD as `aad()` makes it. */
export const SCHEME = 1;
const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export interface Sealed {
  version: number;
  key_id: string;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

/** A sealed value that does not open: unknown key, wrong key, or changed bytes. Never says more. */
export class SealError extends Error {
  override name = 'SealError';
}

/** The additional authenticated data of a user's key for a model. */
export function aad(userId: string, modelId: string): Buffer {
  return Buffer.from(`agentsvc-model-credential\0${userId}\0${modelId}`, 'utf8');
}

/** A key's id: the first 16 hex digits of its SHA-256 (names the key, reveals nothing usable of it). */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** AGENTSVC_SECRET_KEY's value: 32 bytes as 64 hex digits or as base64. Throws naming the setting. */
export function parseKey(setting: string, raw: string): Buffer {
  const v = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v, 'hex') : /^[A-Za-z0-9+/_-]{43}=?$/.test(v) ? Buffer.from(v, 'base64') : null;
  if (!key || key.length !== KEY_BYTES) throw new Error(`${setting}: must be 32 random bytes written as 64 hex digits or base64 (e.g. \`openssl rand -base64 32\`)`);
  return key;
}

export function seal(key: Buffer, plaintext: string, data: Buffer): Sealed {
  const iv = randomBytes(IV_BYTES);
  const c = createCipheriv(CIPHER, key, iv, { authTagLength: TAG_BYTES });
  c.setAAD(data);
  const ciphertext = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
  return { version: SCHEME, key_id: keyId(key), iv, tag: c.getAuthTag(), ciphertext };
}

export function open(key: Buffer, s: Sealed, data: Buffer): string {
  if (s.version !== SCHEME || s.iv.length !== IV_BYTES || s.tag.length !== TAG_BYTES) throw new SealError('not a sealed value of this scheme');
  try {
    const d = createDecipheriv(CIPHER, key, s.iv, { authTagLength: TAG_BYTES });
    d.setAAD(data);
    d.setAuthTag(s.tag);
    return Buffer.concat([d.update(s.ciphertext), d.final()]).toString('utf8');
  } catch {
    throw new SealError('the sealed value does not open with its key (changed, or sealed under another key)');
  }
}

/** `AGENTSVC_HOME/secret.key`: the generated keys, base64, by id; `current` seals. */
interface KeyFile {
  format: 'agentsvc-secret-key';
  current: string;
  keys: Record<string, string>;
}

export interface KeyringOptions {
  /** AGENTSVC_HOME/secret.key. */
  file: string;
  /** AGENTSVC_SECRET_KEY: seals instead of the file's key. */
  current?: string;
  /** AGENTSVC_SECRET_KEY_PREVIOUS: opens what it sealed while a rotation is under way. */
  previous?: string;
}

/**
 * The install's keys. With AGENTSVC_SECRET_KEY that key seals (the file's keys, if any, and
 * AGENTSVC_SECRET_KEY_PREVIOUS still open); without it the key file's current key seals, generated
 * at mode 0600 on the first seal. The file is read again when it may have changed under us (a
 * `secrets rotate` from the CLI): before each seal, and once when a value names an unknown key.
 */
export class Keyring {
  private readonly env = new Map<string, Buffer>();
  private readonly envCurrent: string | null = null;
  private file: KeyFile | null = null;

  constructor(private readonly o: KeyringOptions) {
    if (o.current) {
      const k = parseKey('AGENTSVC_SECRET_KEY', o.current);
      this.envCurrent = keyId(k);
      this.env.set(this.envCurrent, k);
    }
    if (o.previous) {
      const k = parseKey('AGENTSVC_SECRET_KEY_PREVIOUS', o.previous);
      this.env.set(keyId(k), k);
    }
    this.reload();
  }

  /** Whether AGENTSVC_SECRET_KEY decides (else the key file). */
  get fromEnvironment(): boolean {
    return this.envCurrent !== null;
  }

  /** The file's keys as they are on disk now (none: no file yet). A malformed file throws naming it. */
  reload(): void {
    let text: string;
    try {
      text = readFileSync(this.o.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        this.file = null;
        return;
      }
      throw e;
    }
    let f: KeyFile;
    try {
      f = JSON.parse(text) as KeyFile;
    } catch {
      throw new Error(`${this.o.file}: not a key file (not JSON)`);
    }
    if (f?.format !== 'agentsvc-secret-key' || typeof f.keys !== 'object' || !f.keys || typeof f.keys[f.current] !== 'string') throw new Error(`${this.o.file}: not a key file`);
    for (const [id, b64] of Object.entries(f.keys)) {
      if (keyId(Buffer.from(b64, 'base64')) !== id) throw new Error(`${this.o.file}: key ${id} does not match its id`);
    }
    this.file = f;
  }

  /** The id of the key that seals now (the file's is generated here when there is none). */
  currentId(): string {
    if (this.envCurrent) return this.envCurrent;
    this.reload();
    if (!this.file) this.create();
    return this.file!.current;
  }

  /** The key of an id, reading the file again once when it is not known. */
  key(id: string): Buffer | undefined {
    const known = this.known(id);
    if (known) return known;
    this.reload();
    return this.known(id);
  }

  /** Ids of every key this keyring can open with. */
  ids(): string[] {
    return [...new Set([...this.env.keys(), ...Object.keys(this.file?.keys ?? {})])];
  }

  seal(plaintext: string, data: Buffer): Sealed {
    const id = this.currentId();
    return seal(this.key(id)!, plaintext, data);
  }

  open(s: Sealed, data: Buffer): string {
    const key = this.key(s.key_id);
    if (!key) throw new SealError(`sealed under key ${s.key_id}, which this install does not have`);
    return open(key, s, data);
  }

  /**
   * File mode: a new key becomes the current one, the old ones kept to open what they sealed until
   * `retire` drops them. Answers the new key's id.
   */
  addFileKey(): string {
    if (this.envCurrent) throw new Error('AGENTSVC_SECRET_KEY is set: the new key comes from it (docs/model-keys.md)');
    this.reload();
    const key = randomBytes(KEY_BYTES);
    const id = keyId(key);
    const f: KeyFile = { format: 'agentsvc-secret-key', current: id, keys: { ...(this.file?.keys ?? {}), [id]: key.toString('base64') } };
    this.write(f);
    return id;
  }

  /** File mode: forget every key of the file but `keep` (and the current one). */
  retire(keep: ReadonlySet<string>): string[] {
    this.reload();
    if (!this.file) return [];
    const f = this.file;
    const gone = Object.keys(f.keys).filter((id) => id !== f.current && !keep.has(id));
    if (!gone.length) return [];
    this.write({ ...f, keys: Object.fromEntries(Object.entries(f.keys).filter(([id]) => !gone.includes(id))) });
    return gone;
  }

  private known(id: string): Buffer | undefined {
    const e = this.env.get(id);
    if (e) return e;
    const b64 = this.file?.keys[id];
    return b64 ? Buffer.from(b64, 'base64') : undefined;
  }

  /** The first key: created exclusively, so two processes starting at once agree on one. */
  private create() {
    const key = randomBytes(KEY_BYTES);
    const f: KeyFile = { format: 'agentsvc-secret-key', current: keyId(key), keys: { [keyId(key)]: key.toString('base64') } };
    try {
      writeFileSync(this.o.file, `${JSON.stringify(f, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    this.reload();
  }

  /** Replaced whole: written beside it at 0600, then renamed over it. */
  private write(f: KeyFile) {
    const tmp = `${this.o.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(f, null, 2)}\n`, { mode: 0o600, flag: 'w' });
    renameSync(tmp, this.o.file);
    this.file = f;
  }
}
