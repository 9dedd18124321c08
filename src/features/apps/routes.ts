import { posix } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../platform/config/index.js';
import { SessionFolder } from '../../core/files/confine.js';
import { contentTypeOf } from '../../core/files/content-type.js';
import { statEntry } from '../../core/files/entry-ops.js';
import { fsError } from '../../core/files/session-files.js';
import { me, publicRoute } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import { AppParams, PublishBody, PublishedApp, PublishedAppList, type PublishedAppT, Unpublished } from './schemas.js';
import { resolveAppFile } from './serve.js';
import type { PublishedAppRow, PublishedAppStore } from './store.js';

export interface AppRouteDeps {
  config: Config;
  /** The published apps' store, constructed once by the module. */
  apps: PublishedAppStore;
  sessions: { getOwned(userId: string, id: string): Promise<unknown> };
}

const SESSION_ID = /^sess_[A-Za-z0-9]{1,64}$/;

/**
 * What a published app's pages may do: run their scripts, in a sandbox with an opaque origin, so an
 * app the agent wrote can never read what the API's own origin keeps (keys in localStorage) or call
 * the API as its visitor. Its own files stay reachable: they are public, with CORS open.
 */
const APP_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads';

/** Published apps (docs/solutions-and-admin.md): the API under /api/published-apps, the public pages under /apps/. */
export const appRoutes: FastifyPluginAsyncZod<AppRouteDeps> = async (app, d) => {
  const apps = d.apps;
  const tags = ['published-apps'];
  const record = (req: FastifyRequest, r: PublishedAppRow): PublishedAppT => ({
    session_id: r.session_id,
    url: `${d.config.share.publicUrl ?? `${req.protocol}://${req.host}`}/apps/${r.session_id}/`,
    working_dir: r.working_dir,
    published_at: new Date(r.published_at).toISOString(),
  });

  app.post('/api/published-apps', { schema: { tags, body: PublishBody, response: { 200: PublishedApp } } }, async (req) => {
    const userId = me(req).id;
    await d.sessions.getOwned(userId, req.body.session_id);
    // The folder must exist and be a folder; stored in its canonical, link-free form.
    const rel = await SessionFolder.of(d.config.workspaces, userId, req.body.session_id)
      .with(async (s) => {
        const e = await s.walk(req.body.working_dir ?? '', { follow: true });
        try {
          if (!(await statEntry(e)).isDirectory()) throw Errors.invalid(['body', 'working_dir'], 'not a folder of the session workspace');
          // The folder as named, not a link's target: publishing `site` when it is a link to the
          // workspace root would make the whole session public.
          const named = posix.normalize(s.components(req.body.working_dir ?? '').join('/') || '.').replace(/^\.$/, '');
          if (e.rel !== named) throw Errors.invalid(['body', 'working_dir'], 'goes through a symbolic link; publish the folder itself');
          if (e.rel.split('/').some((p) => p.startsWith('.'))) throw Errors.invalid(['body', 'working_dir'], 'a hidden folder cannot be published');
          return e.rel;
        } finally {
          await e.close();
        }
      })
      .catch((e) => {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw Errors.invalid(['body', 'working_dir'], 'no such folder in the session workspace');
        throw fsError(e);
      });
    return record(req, await apps.publish(userId, req.body.session_id, rel));
  });

  app.get('/api/published-apps', { schema: { tags, response: { 200: PublishedAppList } } }, async (req) => {
    return { items: (await apps.list(me(req).id)).map((r) => record(req, r)) };
  });

  app.get('/api/published-apps/:session_id', { schema: { tags, params: AppParams, response: { 200: PublishedApp } } }, async (req) => {
    const row = await apps.get(req.params.session_id, me(req).id);
    if (!row) throw Errors.notFound('published app');
    return record(req, row);
  });

  app.delete('/api/published-apps/:session_id', { schema: { tags, params: AppParams, response: { 200: Unpublished } } }, async (req) => {
    if (!(await apps.remove(me(req).id, req.params.session_id))) throw Errors.notFound('published app');
    return { session_id: req.params.session_id, unpublished: true };
  });

  /**
   * A request the service's own pages make (`Sec-Fetch-Site` same-origin or same-site) for anything
   * but a navigation: a `<script>`, a module import, a worker, a stylesheet, a fetch. Refused: the
   * console's `script-src 'self'` would run such a script with the console's origin. An app's own
   * pages are unaffected (their CSP sandbox gives them an opaque origin, so their requests are
   * cross-site), and so is opening an app in a tab or a frame (a navigation: sandboxed likewise).
   */
  const loadedByOwnPage = (req: FastifyRequest) => {
    const site = req.headers['sec-fetch-site'];
    return (site === 'same-origin' || site === 'same-site') && req.headers['sec-fetch-mode'] !== 'navigate';
  };

  const notFound = (reply: FastifyReply) =>
    reply.code(404).header('cache-control', 'no-store').type('text/plain; charset=utf-8').send('404 not found\n');

  async function serve(req: FastifyRequest, reply: FastifyReply, sessionId: string, path: string) {
    if (!SESSION_ID.test(sessionId) || path.length > 4096) return notFound(reply);
    if (loadedByOwnPage(req))
      return reply
        .code(403)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send('403 a published app is not loaded by the service\'s own pages; open it as a page\n');
    const row = await apps.get(sessionId);
    if (!row) return notFound(reply);
    const got = await resolveAppFile(d.config.workspaces, row.user_id, sessionId, row.working_dir, path).catch((e) => {
      req.log.warn({ err: (e as Error).message, session_id: sessionId }, 'published app: could not read a file');
      return null;
    });
    if (!got) return notFound(reply);
    if (got.kind === 'slash') {
      const last = path.replace(/\/+$/, '').split('/').pop() ?? '';
      return reply.code(308).header('location', `${encodeURIComponent(last)}/`).send();
    }
    const { size } = await got.fh.stat();
    reply
      .type(contentTypeOf(got.rel))
      .header('content-length', size)
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-cache')
      .header('content-security-policy', APP_CSP)
      .header('access-control-allow-origin', '*')
      .header('referrer-policy', 'no-referrer');
    if (size === 0) {
      await got.fh.close();
      return reply.send('');
    }
    return reply.send(got.fh.createReadStream({ start: 0, end: size - 1 }));
  }

  const Params = z.object({ session_id: z.string().max(200), '*': z.string().max(8192).default('') });
  // The router ignores trailing slashes, so whether the URL names a folder is read from the URL itself.
  const slashed = (req: FastifyRequest) => (req.url.split('?')[0] ?? '').endsWith('/');
  // `/apps/<id>` has no folder to be relative to: its pages live under `/apps/<id>/`.
  app.get('/apps/:session_id', { config: publicRoute, schema: { hide: true, params: Params.omit({ '*': true }) } }, async (req, reply) => {
    if (!SESSION_ID.test(req.params.session_id)) return notFound(reply);
    if (slashed(req)) return serve(req, reply, req.params.session_id, '');
    return reply.code(308).header('location', `${req.params.session_id}/`).send();
  });
  app.get('/apps/:session_id/*', { config: publicRoute, schema: { hide: true, params: Params } }, async (req, reply) => {
    const path = req.params['*'];
    return serve(req, reply, req.params.session_id, slashed(req) && path && !path.endsWith('/') ? `${path}/` : path);
  });
};
