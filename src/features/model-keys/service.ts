import { ModelError } from '../../core/models/port.js';
import type { Config } from '../../platform/config/index.js';
import type { ModelEntry } from '../../platform/config/models.js';
import type { Database } from '../../platform/db/index.js';
import type { Logger } from '../../platform/lib/logger.js';
import { Errors } from '../../platform/server/errors.js';
import type { AuditStore } from '../policy/audit-store.js';
import { aad, type Keyring, SealError } from './sealing.js';
import { type CredentialRow, CredentialStore } from './store.js';

export type PersonalKey = 'allowed' | 'required';

/** What GET answers of a model that takes personal keys: never the key, only its masked form. */
export interface CredentialPublic {
  model_id: string;
  personal_key: PersonalKey;
  /** Whether the caller has stored a key for it. */
  set: boolean;
  masked: string | null;
  /** The install key that sealed it (docs/model-keys.md). */
  key_id: string | null;
  /** False when this install cannot open it (restored without its secret key): set it again. */
  readable: boolean | null;
  created_at: string | null;
  updated_at: string | null;
}

export type CredentialChange = 'created' | 'replaced' | 'deleted' | 'rotated';

/** Refused before a run starts when a `required` model has no usable key of the user's. */
export const MISSING = 'MODEL_CREDENTIAL_MISSING';

/** Visible ASCII only: a key goes into an HTTP header, where a line break would be another header. */
const KEY_CHARS = /^[\x21-\x7e]+$/;

/** The prefix and the last 4 characters, like the service's own API keys; a short key shows none. */
export function maskKey(key: string): string {
  return key.length >= 16 ? `${key.slice(0, 3)}****${key.slice(-4)}` : '****';
}

export interface ModelKeysDeps {
  db: Database;
  config: Pick<Config, 'model'>;
  keyring: Keyring;
  audit: Pick<AuditStore, 'add'>;
  logger: Logger;
}

/**
 * Users' own API keys for model entries marked `personal_key` (docs/model-keys.md): sealed with the
 * install's keyring, opened only for that user's model calls, audited as `credential_set`.
 */
export class ModelKeys {
  readonly store: CredentialStore;
  private readonly entries: Map<string, ModelEntry & { personalKey: PersonalKey }>;
  /** A run's keys, opened once at its first model call and forgotten at its end. */
  private readonly runs = new Map<string, Promise<ReadonlyMap<string, string> | undefined>>();

  constructor(private readonly d: ModelKeysDeps) {
    this.store = new CredentialStore(d.db);
    this.entries = new Map(d.config.model.entries.filter((e): e is ModelEntry & { personalKey: PersonalKey } => !!e.personalKey).map((e) => [e.id, e]));
  }

  /** The model entries that take personal keys. */
  models(): { id: string; personal_key: PersonalKey }[] {
    return [...this.entries.values()].map((e) => ({ id: e.id, personal_key: e.personalKey }));
  }

  private entry(modelId: string) {
    const e = this.entries.get(modelId);
    if (e) return e;
    if (this.d.config.model.entries.some((m) => m.id === modelId)) throw Errors.invalid(['path', 'model_id'], `model ${modelId} does not take personal keys (its entry has no "personal_key")`);
    throw Errors.notFound('model');
  }

  private readable(r: CredentialRow): boolean {
    try {
      this.d.keyring.open(r, aad(r.user_id, r.model_id));
      return true;
    } catch {
      return false;
    }
  }

  private toPublic(modelId: string, personal: PersonalKey, r: CredentialRow | undefined): CredentialPublic {
    return {
      model_id: modelId,
      personal_key: personal,
      set: !!r,
      masked: r?.masked ?? null,
      key_id: r?.key_id ?? null,
      readable: r ? this.readable(r) : null,
      created_at: r ? new Date(r.created_at).toISOString() : null,
      updated_at: r ? new Date(r.updated_at).toISOString() : null,
    };
  }

  async list(userId: string): Promise<CredentialPublic[]> {
    const rows = new Map((await this.store.list(userId)).map((r) => [r.model_id, r]));
    return this.models().map((m) => this.toPublic(m.id, m.personal_key, rows.get(m.id)));
  }

  async get(userId: string, modelId: string): Promise<CredentialPublic> {
    const e = this.entry(modelId);
    const [row] = await this.store.list(userId, [modelId]);
    return this.toPublic(modelId, e.personalKey, row);
  }

  /** Seal and store the user's key; `actor` is who did it (the user, or an admin's tool). */
  async set(userId: string, modelId: string, apiKey: string, actor: string): Promise<CredentialPublic> {
    const e = this.entry(modelId);
    const key = apiKey.trim();
    if (!key || key.length > 4096 || !KEY_CHARS.test(key)) throw Errors.invalid(['body', 'api_key'], 'api_key: 1-4096 visible ASCII characters, no spaces or line breaks');
    const sealed = this.d.keyring.seal(key, aad(userId, modelId));
    const { created } = await this.store.put(userId, modelId, sealed, maskKey(key));
    await this.audit(userId, modelId, created ? 'created' : 'replaced', sealed.key_id, actor);
    return this.get(userId, e.id);
  }

  async remove(userId: string, modelId: string, actor: string): Promise<void> {
    this.entry(modelId);
    const keyId = await this.store.remove(userId, modelId);
    if (keyId === null) throw Errors.notFound('credential');
    await this.audit(userId, modelId, 'deleted', keyId, actor);
  }

  private audit(userId: string, modelId: string, change: CredentialChange, keyId: string, actor: string) {
    return this.d.audit.add({
      user_id: userId,
      session_id: '',
      tool_call_id: null,
      tool_name: 'model_credential',
      arguments: JSON.stringify({ model_id: modelId, change, key_id: keyId }),
      action: 'credential_set',
      rule: null,
      source: null,
      decided_by: actor,
    });
  }

  /**
   * The run.before gate: a session whose model requires a personal key is refused when the user has
   * none this install can open. `model`: the session's model (null: the install's default).
   */
  async refusal(userId: string, model: string | null): Promise<{ action: 'refuse'; code: string; message: string; status: number } | undefined> {
    const id = model ?? this.d.config.model.default;
    if (this.entries.get(id)?.personalKey !== 'required') return undefined;
    const [row] = await this.store.list(userId, [id]);
    const how = `PUT /api/me/credentials/${id}, \`agentsvc credentials set ${id}\` or the console's settings`;
    if (!row) return { action: 'refuse', code: MISSING, status: 403, message: `model ${id} runs only with your own API key, and you have none: set it with ${how}` };
    if (!this.readable(row)) {
      return { action: 'refuse', code: MISSING, status: 403, message: `your API key for model ${id} cannot be decrypted by this install (sealed under key ${row.key_id}, which it does not have): set it again with ${how}` };
    }
    return undefined;
  }

  /** The model.credentials step: the run's user's keys for its model and that model's fallbacks. */
  forRun(runId: string, userId: string, model: string): Promise<ReadonlyMap<string, string> | undefined> {
    let keys = this.runs.get(runId);
    if (!keys) {
      keys = this.open(userId, model);
      // Runs end on this node (run.ended forgets them); a bound in case one never says so here.
      if (this.runs.size >= 10_000) this.runs.clear();
      this.runs.set(runId, keys);
      keys.catch(() => this.runs.delete(runId));
    }
    return keys;
  }

  forget(runId: string) {
    this.runs.delete(runId);
  }

  private async open(userId: string, model: string): Promise<ReadonlyMap<string, string> | undefined> {
    const first = this.d.config.model.entries.find((e) => e.id === model);
    const ids = [model, ...(first?.fallback ?? [])].filter((id) => this.entries.has(id));
    if (!ids.length) return undefined;
    const out = new Map<string, string>();
    for (const r of await this.store.list(userId, ids)) {
      try {
        out.set(r.model_id, this.d.keyring.open(r, aad(r.user_id, r.model_id)));
      } catch (e) {
        // Never the key: which row, which key sealed it, and why it did not open.
        this.d.logger.warn({ user_id: userId, model: r.model_id, key_id: r.key_id, reason: (e as Error).message }, 'a personal model key does not open; the install key is used');
      }
    }
    // A required model is never called with the install's key: the run.before gate refuses such a
    // run; this stops any other call of it (a manual compaction), as a model error.
    if (this.entries.get(model)?.personalKey === 'required' && !out.has(model)) {
      throw new ModelError('MODEL_ERROR', `model ${model} runs only with your own API key, and none of yours can be used: set it with PUT /api/me/credentials/${model}`);
    }
    return out.size ? out : undefined;
  }

  /**
   * `agentsvc secrets rotate`: every stored key sealed again under the current key (file mode: a new
   * one generated first), then the file's old keys dropped once nothing is sealed under them. Rows
   * that do not open are counted and left as they are.
   */
  async rotate(actor: string): Promise<{ key_id: string; resealed: number; unreadable: number; retired: string[] }> {
    const keyring = this.d.keyring;
    const target = keyring.fromEnvironment ? keyring.currentId() : keyring.addFileKey();
    let resealed = 0;
    const unreadable: CredentialRow[] = [];
    // Until no row is left under another key: a PUT racing the rotation may seal under the old one.
    for (;;) {
      const page = await this.store.notUnder(target, 200, unreadable);
      if (!page.length) break;
      for (const r of page) {
        const data = aad(r.user_id, r.model_id);
        let plain: string;
        try {
          plain = keyring.open(r, data);
        } catch (e) {
          if (!(e instanceof SealError)) throw e;
          unreadable.push(r);
          continue;
        }
        if (await this.store.reseal(r, keyring.seal(plain, data))) {
          resealed++;
          await this.audit(r.user_id, r.model_id, 'rotated', target, actor);
        }
      }
    }
    const inUse = new Set((await this.store.keyIds()).keys());
    const retired = keyring.fromEnvironment ? [] : keyring.retire(inUse);
    return { key_id: target, resealed, unreadable: unreadable.length, retired };
  }
}

