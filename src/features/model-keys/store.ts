import type { Database } from '../../platform/db/index.js';
import type { Sealed } from './sealing.js';

/** A stored credential: sealed, never the key itself. */
export interface CredentialRow extends Sealed {
  user_id: string;
  model_id: string;
  masked: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'user_id, model_id, version, key_id, iv, tag, ciphertext, masked, created_at, updated_at';

/** The table `model_credentials` (one row per user and model entry). */
export class CredentialStore {
  constructor(private readonly db: Database) {}

  async list(userId: string, modelIds?: readonly string[]): Promise<CredentialRow[]> {
    if (modelIds && !modelIds.length) return [];
    const rows = modelIds
      ? await this.db.sql<CredentialRow>(`select ${COLUMNS} from model_credentials where user_id = ? and model_id = any(?::text[]) order by model_id`, [userId, modelIds])
      : await this.db.sql<CredentialRow>(`select ${COLUMNS} from model_credentials where user_id = ? order by model_id`, [userId]);
    return rows;
  }

  /** Stores the sealed key; answers whether a row was there before (replaced) or not (created). */
  async put(userId: string, modelId: string, s: Sealed, masked: string): Promise<{ created: boolean }> {
    const [row] = await this.db.sql<{ created: boolean }>(
      `insert into model_credentials (user_id, model_id, version, key_id, iv, tag, ciphertext, masked) values (?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (user_id, model_id) do update set version = excluded.version, key_id = excluded.key_id, iv = excluded.iv, tag = excluded.tag,
         ciphertext = excluded.ciphertext, masked = excluded.masked, updated_at = now()
       returning (xmax = 0) as created`,
      [userId, modelId, s.version, s.key_id, s.iv, s.tag, s.ciphertext, masked],
    );
    return { created: !!row?.created };
  }

  /** Answers the key id of the row removed, or null when there was none. */
  async remove(userId: string, modelId: string): Promise<string | null> {
    const [row] = await this.db.sql<{ key_id: string }>('delete from model_credentials where user_id = ? and model_id = ? returning key_id', [userId, modelId]);
    return row?.key_id ?? null;
  }

  /** Rows not sealed under `keyId`, a page at a time (rotation). */
  async notUnder(keyId: string, limit: number, skip: readonly { user_id: string; model_id: string }[]): Promise<CredentialRow[]> {
    const skipped = skip.map((r) => `${r.user_id}\n${r.model_id}`);
    return this.db.sql<CredentialRow>(
      `select ${COLUMNS} from model_credentials where key_id <> ? and not ((user_id || chr(10) || model_id) = any(?::text[])) order by user_id, model_id limit ?`,
      [keyId, skipped, limit],
    );
  }

  /** Replace a row's seal only if it is still the one read (a concurrent PUT wins). */
  async reseal(old: CredentialRow, s: Sealed): Promise<boolean> {
    const rows = await this.db.sql<{ model_id: string }>(
      `update model_credentials set version = ?, key_id = ?, iv = ?, tag = ?, ciphertext = ? where user_id = ? and model_id = ? and key_id = ? and iv = ? returning model_id`,
      [s.version, s.key_id, s.iv, s.tag, s.ciphertext, old.user_id, old.model_id, old.key_id, old.iv],
    );
    return rows.length === 1;
  }

  /** The key ids rows are sealed under, with their counts. */
  async keyIds(): Promise<Map<string, number>> {
    const rows = await this.db.sql<{ key_id: string; n: string }>('select key_id, count(*) as n from model_credentials group by key_id');
    return new Map(rows.map((r) => [r.key_id, Number(r.n)]));
  }
}
