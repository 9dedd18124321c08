import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { randomToken } from '../../platform/lib/ids.js';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';

/** PUT bodies: any JSON value up to 1 MiB (docs/solutions-and-admin.md). */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** Segments of a config path: no hidden names, no `..`, nothing a shell or the file system reads specially. */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

const FilePath = z
  .string()
  .min(1)
  .max(512)
  .refine((p) => p.split('/').length <= 8 && p.split('/').every((s) => SEGMENT.test(s)), 'segments of [A-Za-z0-9._-] (not starting with "."), separated by "/", at most 8');

const Params = z.object({ '*': FilePath });

/**
 * Frontend configuration (docs/solutions-and-admin.md): JSON files under AGENTSVC_HOME/frontend_config, read with any
 * key and written by admins. `theme` and `theme.json` name the same file. A write replaces the file
 * atomically (a temporary file renamed over it), so a reader never sees half of one.
 */
export const frontendConfigRoutes: FastifyPluginAsyncZod<{ home: string }> = async (app, { home }) => {
  const root = join(home, 'frontend_config');
  const tags = ['frontend-config'];
  const fileOf = (p: string) => join(root, p.endsWith('.json') ? p : `${p}.json`);

  app.get('/api/frontend_config/*', { schema: { tags, params: Params } }, async (req, reply) => {
    const raw = await readFile(fileOf(req.params['*']), 'utf8').catch((e) => {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR' || e.code === 'EISDIR') throw Errors.notFound('frontend config');
      throw e;
    });
    return reply.type('application/json; charset=utf-8').header('cache-control', 'no-cache').send(raw);
  });

  // Any JSON value (objects, arrays, strings, numbers, null): the body schema accepts them all.
  app.put('/api/frontend_config/*', { bodyLimit: MAX_CONFIG_BYTES, schema: { tags, params: Params, body: z.unknown() } }, async (req, reply) => {
    if (!me(req).isAdmin) throw Errors.forbidden('frontend config is written by admins only');
    if (req.body === undefined) throw Errors.invalid(['body'], 'a JSON body is required');
    const file = fileOf(req.params['*']);
    const text = JSON.stringify(req.body);
    await mkdir(join(file, '..'), { recursive: true, mode: 0o755 }).catch((e) => {
      if (e.code === 'EEXIST' || e.code === 'ENOTDIR') throw Errors.conflict('NOT_A_DIRECTORY', 'a part of the path is a file');
      throw e;
    });
    const tmp = join(root, `.tmp-${randomToken(12)}`);
    const fh = await open(tmp, 'wx', 0o644);
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file).catch(async (e) => {
      await rm(tmp, { force: true });
      if (e.code === 'EISDIR' || e.code === 'ENOTDIR') throw Errors.conflict('NOT_A_DIRECTORY', 'the path names a folder');
      throw e;
    });
    return reply.type('application/json; charset=utf-8').send(text);
  });
};
