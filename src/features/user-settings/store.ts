import type { Database } from '../../platform/db/index.js';

/** The `user_preferences` table: a user's key/value preferences (docs/memories-and-settings.md). */
export class PreferenceStore {
  constructor(private readonly db: Database) {}

  async get(userId: string, key: string): Promise<string | null> {
    const [r] = await this.db.sql<{ value: string }>('select value from user_preferences where user_id = ? and key = ?', [userId, key]);
    return r?.value ?? null;
  }

  async set(userId: string, key: string, value: string): Promise<void> {
    await this.db.sql('insert into user_preferences (user_id, key, value) values (?, ?, ?) on conflict (user_id, key) do update set value = excluded.value', [userId, key, value]);
  }
}

export interface EnvBucket {
  bucket: string;
  env: Record<string, string>;
}

/**
 * The `env_buckets` table: a user's named env maps (docs/memories-and-settings.md). The `default` bucket reaches a
 * session's tools under the session's own env: the run's claim reads it in its own statement
 * (chat/run-store.ts), and share redaction reads it to mask those values.
 */
export class EnvBucketStore {
  constructor(private readonly db: Database) {}

  list(userId: string): Promise<EnvBucket[]> {
    return this.db.sql<EnvBucket>('select bucket, env from env_buckets where user_id = ? order by bucket', [userId]);
  }

  async get(userId: string, bucket: string): Promise<EnvBucket | null> {
    const [r] = await this.db.sql<EnvBucket>('select bucket, env from env_buckets where user_id = ? and bucket = ?', [userId, bucket]);
    return r ?? null;
  }

  async put(userId: string, bucket: string, env: Record<string, string>): Promise<void> {
    await this.db.sql('insert into env_buckets (user_id, bucket, env) values (?, ?, ?::jsonb) on conflict (user_id, bucket) do update set env = excluded.env', [userId, bucket, JSON.stringify(env)]);
  }

  async remove(userId: string, bucket: string): Promise<boolean> {
    return (await this.db.sql('delete from env_buckets where user_id = ? and bucket = ? returning bucket', [userId, bucket])).length > 0;
  }
}
