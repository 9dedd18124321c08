import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ROOT } from '../lib/assets.js';
import { publicRoute } from './auth.js';
import { AppError } from './errors.js';

/**
 * The web console (docs/console.md): the single-page app built from web/ into dist/web by
 * `npm run build` (so by `npm ci`), served here with its assets and nothing from elsewhere.
 *
 * Every route of this file is public: the page and its scripts carry no user data, the app asks
 * for a key and then talks to /api and /socket.io like any other client. Only the paths listed
 * here are public (decided on the matched route, like the rest of the service): any other path is
 * still 401 without a key.
 */

/** Paths the app routes itself (history API); each answers index.html. */
export const CONSOLE_ROUTES = ['/', '/sessions', '/sessions/*', '/inbox', '/usage', '/devices', '/model-keys', '/users', '/keys', '/audit'];
/** The API reference page (web/docs.html): the OpenAPI document rendered, public (docs/trust-boundary.md). */
export const DOCS_ROUTE = '/api/docs';

/**
 * Everything is bundled and served from this origin: no inline script or style, no CDN. The
 * socket connects to this origin too ('self' covers ws:/wss: of it in CSP level 3 browsers).
 * Blob URLs are the downloads and file previews the app makes from fetched bytes.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self' blob:",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const YEAR = 31_536_000;

function secure(reply: FastifyReply) {
  reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin');
}

export async function consoleRoutes(app: FastifyInstance, opts: { dir?: string } = {}) {
  const dir = opts.dir ?? join(ROOT, 'dist', 'web');
  if (!existsSync(join(dir, 'index.html'))) {
    // A checkout that was not built (`npm run build` builds the console): say so at `/` rather
    // than answering the key-only 401 of an unknown path.
    for (const url of [...CONSOLE_ROUTES, DOCS_ROUTE]) {
      app.get(url, { config: publicRoute, schema: { hide: true } }, async () => {
        throw new AppError(503, 'CONSOLE_NOT_BUILT', 'the web console is not built: run `npm run build`');
      });
    }
    return;
  }
  const assets = join(dir, 'assets');
  await app.register(async (scope) => {
    // Every route registered in this scope (the asset routes of @fastify/static too) is public.
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, ...publicRoute };
      route.schema = { ...route.schema, hide: true };
    });
    await scope.register(fastifyStatic, {
      root: assets,
      prefix: '/assets/',
      // Built by the bundler with a content hash in every name, and precompressed at build.
      preCompressed: true,
      index: false,
      list: false,
      dotfiles: 'deny',
      cacheControl: false,
      // Also called for index.html (sendFile below): that one names the hashed assets of this
      // build, so it is never cached and a new build is picked up at the next load.
      setHeaders: (reply, path) => {
        reply.header('cache-control', dirname(path) === assets ? `public, max-age=${YEAR}, immutable` : 'no-cache').header('x-content-type-options', 'nosniff');
      },
    });
    for (const url of CONSOLE_ROUTES) {
      scope.get(url, async (_req, reply) => {
        secure(reply);
        return reply.sendFile('index.html', dir);
      });
    }
    scope.get(DOCS_ROUTE, async (_req, reply) => {
      secure(reply);
      return reply.sendFile('docs.html', dir);
    });
  });
}
