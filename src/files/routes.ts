import { lstat, rename, stat, symlink, unlink } from 'node:fs/promises';
import { dirname, join, posix, relative } from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config/index.js';
import { me } from '../server/auth.js';
import { AppError, Errors } from '../server/errors.js';
import type { SessionService } from '../sessions/service.js';
import { contentTypeOf } from './content-type.js';
import {
  BareName,
  Deleted,
  FileActionBody,
  Listing,
  PathParams,
  PathResult,
  SessionParams,
  ShareFileBody,
  ShareFileResult,
  Success,
  UploadResult,
  WriteBody,
} from './schemas.js';
import { copyBeside, ensureParent, exists, FileErrors, fsError, listDir, openFile, removeEntry, SessionFiles } from './session-files.js';
import { receiveUpload } from './upload.js';
import { zipFolder } from './zip.js';
import { PathEscapeError } from './workspace.js';

export interface FileRouteDeps {
  config: Config;
  sessions: SessionService;
}

const rootRefused = (what: string) => Errors.invalid(['path'], `the workspace root cannot be ${what}`);

/** `attachment` with an ASCII fallback and the UTF-8 name (RFC 6266). */
function attachment(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export const fileRoutes: FastifyPluginAsyncZod<FileRouteDeps> = async (app, { config, sessions }) => {
  const tags = ['files'];
  const limits = config.limits;

  // Encapsulated: multipart bodies are parsed for these routes only.
  await app.register(multipart, { limits: { fileSize: limits.upload, files: 1000, fields: 100, parts: 1100 } });

  // fs and confinement errors of these routes, mapped to the catalog; the app's handler renders them.
  app.setErrorHandler((err) => {
    if (err instanceof PathEscapeError) throw FileErrors.escape(err.message);
    if ((err as { code?: string }).code === 'FST_INVALID_MULTIPART_CONTENT_TYPE')
      throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'an upload is a multipart/form-data body');
    if (!(err instanceof AppError) && typeof (err as NodeJS.ErrnoException).errno === 'number') throw fsError(err as NodeJS.ErrnoException);
    throw err;
  });

  /** The caller's session folder; 404 before any path is looked at when the session is not theirs. */
  const filesOf = async (req: FastifyRequest & { params: { session_id: string } }): Promise<SessionFiles> => {
    const userId = me(req).id;
    await sessions.getOwned(userId, req.params.session_id);
    return SessionFiles.of(config.home, userId, req.params.session_id);
  };

  // `ls/` and friends name the root: fastify drops the trailing slash, so the `*` route alone would
  // not match. The root twin is left out of the OpenAPI document, where `{*}` may be empty.
  const withRoot = (url: string) => [
    { url, hide: false },
    { url: url.slice(0, -2), hide: true },
  ];

  const statOf = async (abs: string) => {
    try {
      return await stat(abs);
    } catch (e) {
      throw fsError(e);
    }
  };

  for (const { url, hide } of withRoot('/api/sessions/:session_id/ls/*')) {
    app.get(url, { schema: { tags, hide, params: PathParams, response: { 200: Listing } } }, async (req) => {
      const files = await filesOf(req);
      const at = await files.follow(req.params['*']);
      if (!(await statOf(at.abs)).isDirectory()) throw FileErrors.notDir();
      return listDir(at.abs, await files.root());
    });
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/files/*')) {
    app.get(url, { schema: { tags, hide, params: PathParams } }, async (req, reply) => {
      const files = await filesOf(req);
      const at = await files.follow(req.params['*']);
      const fh = await openFile(at.abs, 'read');
      const { size } = await fh.stat();
      return reply
        .type(contentTypeOf(at.rel))
        .header('content-length', size)
        .header('x-content-type-options', 'nosniff')
        .send(fh.createReadStream());
    });
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/files/*')) {
    app.put(
      url,
      // JSON escaping can double the body of a text at the limit; the content itself is checked below.
      { bodyLimit: limits.file * 2 + 64 * 1024, schema: { tags, hide, params: PathParams, body: WriteBody, response: { 200: Success } } },
      async (req) => {
        const files = await filesOf(req);
        const bytes = Buffer.byteLength(req.body.content, 'utf8');
        if (bytes > limits.file) throw Errors.tooLarge(`content is ${bytes} bytes, over the limit of ${limits.file}`);
        const at = await files.follow(req.params['*']);
        if (at.rel === '') throw FileErrors.isDir();
        await ensureParent(at.abs);
        // The folders just made must not have let a link in between: resolve once more, then write.
        const again = await files.follow(at.rel);
        const fh = await openFile(again.abs, 'write');
        try {
          await fh.writeFile(req.body.content, 'utf8');
        } finally {
          await fh.close();
        }
        return { success: true };
      },
    );
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/files/*')) {
    app.delete(url, { schema: { tags, hide, params: PathParams, response: { 200: Deleted } } }, async (req) => {
      const files = await filesOf(req);
      const at = await files.entry(req.params['*']);
      if (at.rel === '') throw rootRefused('deleted');
      await removeEntry(at.abs);
      return { deleted: true };
    });
  }

  // The wildcard must end the route, so `/rename` and `/copy` are read off its end here.
  app.post(
    '/api/sessions/:session_id/files/*',
    { schema: { tags, params: PathParams, body: FileActionBody, response: { 200: PathResult } } },
    async (req) => {
      const files = await filesOf(req);
      const m = /^(.*)\/(rename|copy)$/.exec(req.params['*']);
      if (!m) throw new AppError(404, 'NOT_FOUND', 'no such action: POST .../files/{path}/rename or .../files/{path}/copy');
      const [, path, action] = m;
      if (action === 'copy') {
        const at = await files.entry(path);
        if (at.rel === '') throw rootRefused('copied');
        const src = await files.follow(at.rel);
        return { path: await copyBeside(src.abs, dirname(at.abs), at.rel) };
      }
      const parsed = BareName.safeParse(req.body?.new_name);
      if (!parsed.success) throw Errors.invalid(['body', 'new_name'], parsed.error.issues[0]?.message ?? 'invalid');
      const at = await files.entry(path);
      if (at.rel === '') throw rootRefused('renamed');
      await lstat(at.abs);
      const dest = join(dirname(at.abs), parsed.data);
      const dir = posix.dirname(at.rel);
      const newRel = dir === '.' ? parsed.data : `${dir}/${parsed.data}`;
      if (newRel === at.rel) return { path: newRel };
      if (await exists(dest)) throw Errors.conflict('ALREADY_EXISTS', `${newRel} already exists`);
      await rename(at.abs, dest);
      return { path: newRel };
    },
  );

  for (const { url, hide } of withRoot('/api/sessions/:session_id/upload/*')) {
    app.post(url, { schema: { tags, hide, params: PathParams, consumes: ['multipart/form-data'], response: { 200: UploadResult } } }, async (req) => {
      const files = await filesOf(req);
      const dir = await files.follow(req.params['*']);
      try {
        if (!(await stat(dir.abs)).isDirectory()) throw FileErrors.notDir();
      } catch (e) {
        if (e.code !== 'ENOENT') throw e; // a folder that does not exist yet is created
      }
      return receiveUpload(req, files, dir.rel, join(config.home, 'tmp', 'uploads'), limits.upload);
    });
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/download-dir/*')) {
    app.get(url, { schema: { tags, hide, params: PathParams } }, async (req, reply) => {
      const files = await filesOf(req);
      const at = await files.follow(req.params['*']);
      if (!(await statOf(at.abs)).isDirectory()) throw FileErrors.notDir();
      const name = at.rel === '' ? 'workspace.zip' : `${posix.basename(at.rel)}.zip`;
      const zip = await zipFolder(await files.root(), at.abs);
      return reply.type('application/zip').header('content-disposition', attachment(name)).send(zip);
    });
  }

  app.post(
    '/api/sessions/:session_id/share-file',
    { schema: { tags, params: SessionParams, body: ShareFileBody, response: { 200: ShareFileResult } } },
    async (req) => {
      const files = await filesOf(req);
      const { source_path, link_name, share_folder } = req.body;
      const source = await files.follow(source_path);
      if (source.rel === '') throw rootRefused('shared');
      await statOf(source.abs);
      const target = await files.relOf(source.abs);
      const linkRel = posix.join('.share', share_folder.replace(/^\/+/, ''), link_name || posix.basename(source.rel));
      if (!linkRel.startsWith('.share/')) throw FileErrors.escape('share_folder must stay inside .share');
      const link = await files.entry(linkRel);
      await ensureParent(link.abs);
      const again = await files.entry(link.rel);
      const existing = await lstat(again.abs).catch(() => null);
      // Sharing again under the same name moves the link; a real file or folder there is never replaced.
      if (existing && !existing.isSymbolicLink()) throw Errors.conflict('ALREADY_EXISTS', `${link.rel} already exists`);
      if (existing) await unlink(again.abs);
      // Relative, so the link means the same inside the computer, where the folder sits elsewhere.
      await symlink(relative(dirname(again.abs), source.abs) || '.', again.abs);
      return { path: link.rel, target };
    },
  );
};
