import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database } from '../db/index.js';
import { text } from '../lib/storable.js';
import { me } from '../server/auth.js';
import { Errors } from '../server/errors.js';
import { EnvMap } from '../sessions/schemas.js';

/**
 * User preferences and env buckets (CONTRACT 10). The `default` bucket reaches the session's tools
 * under the session's own env (the run's claim merges them). Values are never logged.
 */
export const settingsRoutes: FastifyPluginAsyncZod<{ db: Database }> = async (app, { db }) => {
  const sql = <T>(q: string, p: unknown[] = []) => db.sql<T>(q, p);
  const tags = ['settings'];
  const Key = z.object({ key: text(128, 1) });
  const Bucket = z.object({ bucket: z.string().min(1).max(64).regex(/^[A-Za-z0-9_.-]+$/, 'bucket names are 1-64 of A-Z a-z 0-9 _ . -') });
  const BucketOut = z.object({ bucket: z.string(), env: z.record(z.string(), z.string()) });

  app.get('/api/user/preferences/:key', { schema: { tags, params: Key, response: { 200: z.object({ value: z.string().nullable() }) } } }, async (req) => {
    const [r] = await sql<{ value: string }>('select value from user_preferences where user_id = ? and key = ?', [me(req).id, req.params.key]);
    return { value: r?.value ?? null };
  });
  app.put(
    '/api/user/preferences/:key',
    { schema: { tags, params: Key, body: z.object({ value: text(100_000) }).strict(), response: { 200: z.object({ value: z.string() }) } } },
    async (req) => {
      await sql('insert into user_preferences (user_id, key, value) values (?, ?, ?) on conflict (user_id, key) do update set value = excluded.value', [
        me(req).id,
        req.params.key,
        req.body.value,
      ]);
      return { value: req.body.value };
    },
  );

  app.get('/api/user/env-buckets', { schema: { tags, response: { 200: z.array(BucketOut) } } }, async (req) =>
    sql<{ bucket: string; env: Record<string, string> }>('select bucket, env from env_buckets where user_id = ? order by bucket', [me(req).id]),
  );
  app.get('/api/user/env-buckets/:bucket', { schema: { tags, params: Bucket, response: { 200: BucketOut } } }, async (req) => {
    const [r] = await sql<{ bucket: string; env: Record<string, string> }>('select bucket, env from env_buckets where user_id = ? and bucket = ?', [me(req).id, req.params.bucket]);
    if (!r) throw Errors.notFound('env bucket');
    return r;
  });
  app.put('/api/user/env-buckets/:bucket', { schema: { tags, params: Bucket, body: z.object({ env: EnvMap }).strict(), response: { 200: BucketOut } } }, async (req) => {
    await sql('insert into env_buckets (user_id, bucket, env) values (?, ?, ?::jsonb) on conflict (user_id, bucket) do update set env = excluded.env', [
      me(req).id,
      req.params.bucket,
      JSON.stringify(req.body.env),
    ]);
    return { bucket: req.params.bucket, env: req.body.env };
  });
  app.delete('/api/user/env-buckets/:bucket', { schema: { tags, params: Bucket, response: { 200: z.object({ bucket: z.string(), status: z.string() }) } } }, async (req) => {
    const r = await sql('delete from env_buckets where user_id = ? and bucket = ? returning bucket', [me(req).id, req.params.bucket]);
    if (!r.length) throw Errors.notFound('env bucket');
    return { bucket: req.params.bucket, status: 'deleted' };
  });
};
