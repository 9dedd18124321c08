import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { Config } from '../../platform/config/index.js';
import type { Database } from '../../platform/db/index.js';
import { me } from '../../platform/server/auth.js';
import { AppError } from '../../platform/server/errors.js';
import { type SessionDetail, SessionParams } from '../../core/sessions/schemas.js';
import { exportSession, type SessionParts } from './archive.js';
import type { StorageQuota } from '../../core/files/quota.js';
import { cleanup, createFromArchive, readArchive } from './import.js';

export interface PortabilityDeps {
  config: Config;
  /** The stores of a session's parts (archive.ts). */
  parts: SessionParts;
  db: Pick<Database, 'transaction'>;
  /** The service's storage quota (an import's files count against it). */
  quota: StorageQuota;
  sessions: {
    getOwned(userId: string, id: string): Promise<unknown>;
    create(userId: string, input: { intent: string; model?: string | null; is_persistent: boolean; memory_enabled?: boolean | null }): Promise<string>;
    detail(userId: string, id: string): Promise<z.infer<typeof SessionDetail>>;
  };
}

/** GET .../export, POST .../preview-import and .../import (docs/sharing-and-portability.md). */
export const portabilityRoutes: FastifyPluginAsyncZod<PortabilityDeps> = async (app, d) => {
  const { config } = d;
  await app.register(multipart, { limits: { fileSize: config.limits.upload, files: 1, fields: 10 } });
  const limits = { entries: config.importLimits.entries, bytes: config.importLimits.bytes };
  const tags = ['sessions'];

  /** The upload spooled to a private temp folder (removed by the caller), and the form fields. */
  async function spool(req: FastifyRequest): Promise<{ dir: string; zip: string; fields: Record<string, string> }> {
    if (!req.isMultipart()) throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the archive as multipart/form-data, field `file`');
    const base = join(config.workspaces, '.import-tmp');
    await mkdir(base, { recursive: true, mode: 0o700 });
    const dir = await mkdtemp(join(base, 'imp-'));
    const zip = join(dir, 'upload.zip');
    const fields: Record<string, string> = {};
    let got = false;
    try {
      for await (const part of req.parts()) {
        if (part.type === 'file') {
          if (part.fieldname !== 'file' || got) {
            part.file.resume();
            continue;
          }
          got = true;
          await pipeline(part.file, createWriteStream(zip, { mode: 0o600 }));
          if (part.file.truncated) throw new AppError(413, 'PAYLOAD_TOO_LARGE', `the archive is over the upload limit of ${config.limits.upload} bytes`);
        } else fields[part.fieldname] = String(part.value ?? '');
      }
      if (!got) throw new AppError(422, 'VALIDATION_ERROR', [{ loc: ['body', 'file'], msg: 'the ZIP file is required', type: 'missing' }]);
      return { dir, zip, fields };
    } catch (e) {
      await cleanup(dir);
      // A malformed multipart body (no boundary, cut short) is the client's fault.
      if (e instanceof AppError || (e as { statusCode?: number }).statusCode) throw e;
      throw new AppError(400, 'INVALID_MULTIPART', `the multipart body could not be read: ${(e as Error).message}`);
    }
  }

  app.get('/api/sessions/:session_id/export', { schema: { tags, params: SessionParams } }, async (req, reply) => {
    const userId = me(req).id;
    await d.sessions.getOwned(userId, req.params.session_id);
    const { stream, intent } = await exportSession(d.parts, config.workspaces, userId, req.params.session_id);
    const safe = (intent || req.params.session_id).replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 60) || 'session';
    // What the archive holds, known before it streams: clients show progress against it.
    reply
      .type('application/zip')
      .header('content-disposition', `attachment; filename="${safe}.zip"`)
      .header('cache-control', 'no-store')
      .header('x-archive-entries', String(stream.entries))
      .header('x-archive-bytes', String(stream.bytes));
    return reply.send(stream);
  });

  /**
   * One import or preview per user at a time (on this node): each spools up to the upload limit
   * and unpacks up to AGENTSVC_IMPORT_MAX_BYTES, so a second one is refused before its body is read.
   */
  const importing = new Set<string>();
  async function alone<T>(userId: string, reply: FastifyReply, work: () => Promise<T>): Promise<T> {
    if (importing.has(userId)) {
      reply.header('retry-after', '5');
      throw new AppError(429, 'RATE_LIMITED', 'an import or preview-import of yours is already running; send this one when it has ended');
    }
    importing.add(userId);
    try {
      return await work();
    } finally {
      importing.delete(userId);
    }
  }

  app.post('/api/sessions/preview-import', { schema: { tags } }, async (req, reply) =>
    alone(me(req).id, reply, async () => {
      const up = await spool(req);
      try {
        const p = await readArchive(up.zip, limits, null);
        return { format: p.manifest.format, version: p.manifest.version, intent: String(p.manifest.session?.intent ?? ''), turns: p.turns, files: p.files, total_bytes: p.totalBytes, warnings: p.warnings };
      } finally {
        await cleanup(up.dir);
      }
    }),
  );

  app.post('/api/sessions/import', { schema: { tags } }, async (req, reply) => {
    const userId = me(req).id;
    return alone(userId, reply, async () => {
      const up = await spool(req);
      try {
        const staged = join(up.dir, 'unpacked');
        await mkdir(staged, { mode: 0o700 });
        const p = await readArchive(up.zip, limits, staged);
        const name = (up.fields.name ?? '').slice(0, 10000);
        const sid = await createFromArchive({ db: d.db, workspaces: config.workspaces, quota: d.quota, parts: d.parts, models: config.model.models }, userId, p, staged, name);
        return { ...(await d.sessions.detail(userId, sid)), session_id: sid };
      } finally {
        await cleanup(up.dir);
      }
    });
  });
};
