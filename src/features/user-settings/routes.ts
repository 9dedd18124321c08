import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { text } from '../../platform/lib/storable.js';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import { EnvMap } from '../../core/sessions/schemas.js';
import type { EnvBucketStore, PreferenceStore } from './store.js';

/**
 * User preferences and env buckets (docs/memories-and-settings.md). The `default` bucket reaches the session's tools
 * under the session's own env (the run's claim merges them). Values are never logged.
 */
export const settingsRoutes: FastifyPluginAsyncZod<{ preferences: PreferenceStore; buckets: EnvBucketStore }> = async (app, { preferences, buckets }) => {
  const tags = ['settings'];
  const Key = z.object({ key: text(128, 1) });
  const Bucket = z.object({ bucket: z.string().min(1).max(64).regex(/^[A-Za-z0-9_.-]+$/, 'bucket names are 1-64 of A-Z a-z 0-9 _ . -') });
  const BucketOut = z.object({ bucket: z.string(), env: z.record(z.string(), z.string()) });

  app.get('/api/user/preferences/:key', { schema: { tags, params: Key, response: { 200: z.object({ value: z.string().nullable() }) } } }, async (req) => {
    return { value: await preferences.get(me(req).id, req.params.key) };
  });
  app.put(
    '/api/user/preferences/:key',
    { schema: { tags, params: Key, body: z.object({ value: text(100_000) }).strict(), response: { 200: z.object({ value: z.string() }) } } },
    async (req) => {
      await preferences.set(me(req).id, req.params.key, req.body.value);
      return { value: req.body.value };
    },
  );

  app.get('/api/user/env-buckets', { schema: { tags, response: { 200: z.array(BucketOut) } } }, async (req) => buckets.list(me(req).id));
  app.get('/api/user/env-buckets/:bucket', { schema: { tags, params: Bucket, response: { 200: BucketOut } } }, async (req) => {
    const r = await buckets.get(me(req).id, req.params.bucket);
    if (!r) throw Errors.notFound('env bucket');
    return r;
  });
  app.put('/api/user/env-buckets/:bucket', { schema: { tags, params: Bucket, body: z.object({ env: EnvMap }).strict(), response: { 200: BucketOut } } }, async (req) => {
    await buckets.put(me(req).id, req.params.bucket, req.body.env);
    return { bucket: req.params.bucket, env: req.body.env };
  });
  app.delete('/api/user/env-buckets/:bucket', { schema: { tags, params: Bucket, response: { 200: z.object({ bucket: z.string(), status: z.string() }) } } }, async (req) => {
    if (!(await buckets.remove(me(req).id, req.params.bucket))) throw Errors.notFound('env bucket');
    return { bucket: req.params.bucket, status: 'deleted' };
  });
};
