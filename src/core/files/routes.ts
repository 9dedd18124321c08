import { lstat, rename, symlink, unlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../../platform/config/index.js';
import { me } from '../../platform/server/auth.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import type { SessionService } from '../sessions/service.js';
import { at, PathEscapeError, type SessionFolder, NotAFolderError, type Entry, type OpenSession } from './confine.js';
import { contentTypeOf } from './content-type.js';
import { exists, listDir, openRead, removeEntry, statEntry, writeWhole } from './entry-ops.js';
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
import { copyBeside, FileErrors, fsError } from './session-files.js';
import type { SessionFolders } from './session-folder.js';
import { receiveUpload } from './upload.js';
import { zipFolder } from './zip.js';

export interface FileRouteDeps {
  config: Config;
  sessions: SessionService;
  /** Whom new entries belong to (the computer's user: SessionFolders.owner). */
  folders: SessionFolders;
}

const rootRefused = (what: string) => Errors.invalid(['path'], `the workspace root cannot be ${what}`);

/** `attachment` with an ASCII fallback and the UTF-8 name (RFC 6266). */
function attachment(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export const fileRoutes: FastifyPluginAsyncZod<FileRouteDeps> = async (app, { config, sessions, folders }) => {
  const tags = ['files'];
  const limits = config.limits;

  // Encapsulated: multipart bodies are parsed for these routes only.
  // files: one more than allowed, so the request over the bound is seen and answered 413 by receiveUpload.
  await app.register(multipart, { limits: { fileSize: limits.upload, files: limits.uploadFiles + 1, fields: 100, parts: limits.uploadFiles + 101 } });

  // fs and confinement errors of these routes, mapped to the catalog; the app's handler renders them.
  app.setErrorHandler((err) => {
    if (err instanceof PathEscapeError || err instanceof NotAFolderError) throw fsError(err);
    if ((err as { code?: string }).code === 'FST_INVALID_MULTIPART_CONTENT_TYPE')
      throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'an upload is a multipart/form-data body');
    // busboy's own refusals of a malformed body ("Multipart: Boundary not found", ...): bad input.
    if (!(err instanceof AppError) && /^Multipart: /.test((err as Error).message ?? ''))
      throw new AppError(400, 'INVALID_MULTIPART', `the multipart body is malformed (${(err as Error).message.replace(/^Multipart: /, '')})`);
    if (!(err instanceof AppError) && typeof (err as NodeJS.ErrnoException).errno === 'number') throw fsError(err as NodeJS.ErrnoException);
    throw err;
  });

  /** The caller's session folder; 404 before any path is looked at when the session is not theirs. */
  const folderOf = async (req: FastifyRequest & { params: { session_id: string } }): Promise<SessionFolder> => {
    const userId = me(req).id;
    await sessions.getOwned(userId, req.params.session_id);
    return folders.folder(userId, req.params.session_id);
  };
  /**
   * The folder of a session the caller may read: their own, or a teammate's through a team
   * workspace (docs/identity.md), at its owner's place. Only the reading routes use it.
   */
  const readFolderOf = async (req: FastifyRequest & { params: { session_id: string } }): Promise<SessionFolder> => {
    const s = await sessions.getReadable(me(req).id, req.params.session_id);
    return folders.folder(s.userId, req.params.session_id);
  };
  const inReadable = async <T>(req: FastifyRequest & { params: { session_id: string } }, fn: (s: OpenSession) => Promise<T>): Promise<T> =>
    (await readFolderOf(req)).with(fn);
  /** The computer's user, to whom entries these routes make are handed (so the agent can use them). */
  const ownerOf = (req: FastifyRequest) => folders.owner(me(req).id);
  /** Run `fn` on the verified session folder; every descriptor it opened is closed after. */
  const inSession = async <T>(req: FastifyRequest & { params: { session_id: string } }, fn: (s: OpenSession) => Promise<T>): Promise<T> =>
    (await folderOf(req)).with(fn);

  // `ls/` and friends name the root: fastify drops the trailing slash, so the `*` route alone would
  // not match. The root twin is left out of the OpenAPI document, where `{*}` may be empty.
  const withRoot = (url: string) => [
    { url, hide: false },
    { url: url.slice(0, -2), hide: true },
  ];

  /** A walked entry that must be an existing folder. */
  const mustBeDir = async (e: Entry) => {
    if (!(await statEntry(e)).isDirectory()) throw FileErrors.notDir();
  };

  for (const { url, hide } of withRoot('/api/sessions/:session_id/ls/*')) {
    app.get(url, { schema: { tags, hide, params: PathParams, response: { 200: Listing } } }, async (req) =>
      inReadable(req, async (s) => {
        const at = await s.walk(req.params['*'], { follow: true });
        try {
          await mustBeDir(at);
          return await listDir(s, at);
        } finally {
          await at.close();
        }
      }),
    );
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/files/*')) {
    app.get(url, { schema: { tags, hide, params: PathParams } }, async (req, reply) => {
      const { fh, rel } = await inReadable(req, async (s) => {
        const at = await s.walk(req.params['*'], { follow: true });
        return { fh: await openRead(at).finally(() => at.close()), rel: at.rel };
      });
      const { size } = await fh.stat();
      reply.type(contentTypeOf(rel)).header('content-length', size).header('x-content-type-options', 'nosniff');
      if (size === 0) {
        await fh.close();
        return reply.send('');
      }
      // Exactly the bytes announced: a file growing meanwhile is not read past them.
      return reply.send(fh.createReadStream({ start: 0, end: size - 1 }));
    });
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/files/*')) {
    app.put(
      url,
      // JSON escaping can double the body of a text at the limit; the content itself is checked below.
      { bodyLimit: limits.file * 2 + 64 * 1024, schema: { tags, hide, params: PathParams, body: WriteBody, response: { 200: Success } } },
      async (req) => {
        const bytes = Buffer.byteLength(req.body.content, 'utf8');
        const folder = await folderOf(req);
        if (bytes > limits.file) throw Errors.tooLarge(`content is ${bytes} bytes, over the limit of ${limits.file}`);
        const owner = await ownerOf(req);
        return folder.with(async (s) => {
          const at = await s.walk(req.params['*'], { follow: true, mkdirs: true, owner });
          try {
            await writeWhole(at, req.body.content, { owner });
          } finally {
            await at.close();
          }
          return { success: true };
        });
      },
    );
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/files/*')) {
    app.delete(url, { schema: { tags, hide, params: PathParams, response: { 200: Deleted } } }, async (req) =>
      inSession(req, async (s) => {
        const at = await s.walk(req.params['*']);
        try {
          if (at.rel === '') throw rootRefused('deleted');
          await removeEntry(at.path);
        } finally {
          await at.close();
        }
        return { deleted: true };
      }),
    );
  }

  // The wildcard must end the route, so `/rename` and `/copy` are read off its end here.
  app.post(
    '/api/sessions/:session_id/files/*',
    { schema: { tags, params: PathParams, body: FileActionBody, response: { 200: PathResult } } },
    async (req) => {
      const folder = await folderOf(req);
      const m = /^(.*)\/(rename|copy)$/.exec(req.params['*']);
      if (!m) throw new AppError(404, 'NOT_FOUND', 'no such action: POST .../files/{path}/rename or .../files/{path}/copy');
      const [, path, action] = m;
      const parsed = action === 'rename' ? BareName.safeParse(req.body?.new_name) : null;
      if (parsed && !parsed.success) throw Errors.invalid(['body', 'new_name'], parsed.error.issues[0]?.message ?? 'invalid');
      const owner = action === 'copy' ? await ownerOf(req) : undefined;
      return folder.with(async (s) => {
        const place = await s.walk(path);
        try {
          if (place.rel === '' || place.name === null) throw rootRefused(action === 'copy' ? 'copied' : 'renamed');
          if (action === 'copy') {
            const src = await s.walk(place.rel, { follow: true });
            return { path: await copyBeside(src, place, owner).finally(() => src.close()) };
          }
          const newName = parsed!.data as string;
          await statEntry(place);
          const dir = posix.dirname(place.rel);
          const newRel = dir === '.' ? newName : `${dir}/${newName}`;
          if (newRel === place.rel) return { path: newRel };
          if (await exists(at(place.dir, newName))) throw Errors.conflict('ALREADY_EXISTS', `${newRel} already exists`);
          await rename(place.path, at(place.dir, newName));
          return { path: newRel };
        } finally {
          await place.close();
        }
      });
    },
  );

  for (const { url, hide } of withRoot('/api/sessions/:session_id/upload/*')) {
    app.post(url, { schema: { tags, hide, params: PathParams, consumes: ['multipart/form-data'], response: { 200: UploadResult } } }, async (req) => {
      const folder = await folderOf(req);
      const dirRel = await folder.with(async (s) => {
        const dir = await s.walk(req.params['*'], { follow: true });
        try {
          if (!(await statEntry(dir)).isDirectory()) throw FileErrors.notDir();
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // a folder that does not exist yet is created
        } finally {
          await dir.close();
        }
        return dir.rel;
      });
      const limitsOf = { file: limits.upload, files: limits.uploadFiles, total: limits.uploadTotal };
      return receiveUpload(req, folder, dirRel, join(config.home, 'tmp', 'uploads'), limitsOf, await ownerOf(req));
    });
  }

  for (const { url, hide } of withRoot('/api/sessions/:session_id/download-dir/*')) {
    app.get(url, { schema: { tags, hide, params: PathParams } }, async (req, reply) => {
      const folder = await readFolderOf(req);
      const items = await folder.with(async (s) => {
        const dir = await s.walk(req.params['*'], { follow: true });
        try {
          await mustBeDir(dir);
          return { rel: dir.rel, zip: await zipFolder(folder, s, dir) };
        } finally {
          await dir.close();
        }
      });
      const name = items.rel === '' ? 'workspace.zip' : `${posix.basename(items.rel)}.zip`;
      return reply.type('application/zip').header('content-disposition', attachment(name)).send(items.zip);
    });
  }

  app.post(
    '/api/sessions/:session_id/share-file',
    { schema: { tags, params: SessionParams, body: ShareFileBody, response: { 200: ShareFileResult } } },
    async (req) =>
      inSession(req, async (s) => {
        const { source_path, link_name, share_folder } = req.body;
        const source = await s.walk(source_path, { follow: true });
        try {
          if (source.rel === '') throw rootRefused('shared');
          await statEntry(source);
          const linkRel = posix.join('.share', share_folder.replace(/^\/+/, ''), link_name || posix.basename(source.rel));
          if (!linkRel.startsWith('.share/')) throw FileErrors.escape('share_folder must stay inside .share');
          const link = await s.walk(linkRel, { mkdirs: true });
          try {
            if (link.name === null || !link.rel.startsWith('.share/')) throw FileErrors.escape('the link must stay inside .share');
            const existing = await lstat(link.path).catch(() => null);
            // Sharing again under the same name moves the link; a real file or folder there is never replaced.
            if (existing && !existing.isSymbolicLink()) throw Errors.conflict('ALREADY_EXISTS', `${link.rel} already exists`);
            if (existing) await unlink(link.path);
            // Relative, so the link means the same inside the computer, where the folder sits elsewhere.
            await symlink(posix.relative(posix.dirname(link.rel), source.rel) || '.', link.path);
            return { path: link.rel, target: source.rel };
          } finally {
            await link.close();
          }
        } finally {
          await source.close();
        }
      }),
  );
};
