import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TurnSchema } from '../../core/events/catalogue.js';
import type { TurnStore } from '../../core/conversation/turn-store.js';
import type { Config } from '../../platform/config/index.js';
import type { Database } from '../../platform/db/index.js';
import { newId, randomToken } from '../../platform/lib/ids.js';
import { text } from '../../platform/lib/storable.js';
import { me, publicRoute } from '../../platform/server/auth.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import { SessionParams } from '../../core/sessions/schemas.js';
import { redactor, type SecretSources, sessionSecrets } from './redact.js';
import { shareMarkdown } from './markdown.js';
import { renderGone } from './render.js';
import type { ShareLinkStore } from './store.js';
import { primed, shareJson, sharePage, turnPages } from './stream.js';

export interface SharingDeps {
  config: Config;
  db: Database;
  turns: TurnStore;
  sessions: { getOwned(userId: string, id: string): Promise<{ id: string }>; setShared(userId: string, id: string, shared: boolean): Promise<boolean>; intentOf(id: string): Promise<string | undefined> } & SecretSources['sessions'];
  buckets: SecretSources['buckets'];
  /** The share links' store, constructed once by the module. */
  links: ShareLinkStore;
}

const hash = (token: string) => createHash('sha256').update(token).digest('hex');
const TOKEN = /^share_[A-Za-z0-9]{32}$/;

/**
 * Share links (docs/sharing-and-portability.md): a token (stored as its SHA-256 only) that reads the session's active
 * branch at fetch time, as JSON (`/api/share/{token}`) and as a page (`/share/{token}`), without a
 * key. Expired, revoked or unknown: 404; with public sharing off, nothing answers.
 */
export const sharingRoutes: FastifyPluginAsyncZod<SharingDeps> = async (app, d) => {
  const links = d.links;
  const tags = ['sharing'];

  app.post(
    '/api/sessions/:session_id/share',
    {
      schema: {
        tags,
        params: SessionParams,
        body: z.object({ ttl_seconds: z.number().int().min(60).max(31_536_000).optional() }).strict().default({}),
        response: { 200: z.object({ token: z.string(), url: z.string(), expires_at: z.string() }) },
      },
    },
    async (req) => {
      if (!d.config.publicSharing) throw new AppError(403, 'SHARING_DISABLED', 'public sharing is turned off on this server (AGENTSVC_PUBLIC_SHARING)');
      const userId = me(req).id;
      await d.sessions.getOwned(userId, req.params.session_id);
      const token = `share_${randomToken(32)}`;
      const ttl = req.body?.ttl_seconds ?? d.config.share.ttlSeconds;
      const expires = await links.create(newId('share'), hash(token), req.params.session_id, ttl);
      await d.sessions.setShared(userId, req.params.session_id, true);
      const origin = d.config.share.publicUrl ?? `${req.protocol}://${req.host}`;
      return { token, url: `${origin}/share/${token}`, expires_at: expires.toISOString() };
    },
  );

  app.delete(
    '/api/sessions/:session_id/share/:token',
    { schema: { tags, params: SessionParams.extend({ token: text(100, 1) }), response: { 200: z.object({ revoked: z.boolean() }) } } },
    async (req) => {
      await d.sessions.getOwned(me(req).id, req.params.session_id);
      if (!(await links.revoke(hash(req.params.token), req.params.session_id))) throw Errors.notFound('share link');
      return { revoked: true };
    },
  );

  /** The shared session, or null (404) for a bad, expired or revoked token, or sharing off. */
  async function resolve(token: string) {
    if (!d.config.publicSharing || !TOKEN.test(token)) return null;
    const h = hash(token);
    const row = await links.live(h);
    if (!row || !timingSafeEqual(Buffer.from(row.token_hash), Buffer.from(h))) return null;
    const intent = await d.sessions.intentOf(row.session_id);
    if (intent === undefined) return null;
    // Values of the session's env (and the owner's default bucket) never leave through a share:
    // masked in the values, before the JSON or the page encodes them.
    const mask = redactor(await sessionSecrets({ sessions: d.sessions, buckets: d.buckets }, row.session_id));
    // One branch for the whole reply, even when a rewind switches it meanwhile.
    const branch = await d.turns.activeBranch(row.session_id);
    const pages = (through?: number) => turnPages(d.turns, row.session_id, branch, mask, through);
    return { intent: mask(intent), expires: new Date(row.expires_at), session: row.session_id, branch, pages };
  }

  app.get(
    '/api/share/:token',
    { config: publicRoute, schema: { tags, params: z.object({ token: text(100, 1) }), response: { 200: z.object({ intent: z.string(), turns: z.array(TurnSchema) }) } } },
    async (req, reply) => {
      const s = await resolve(req.params.token);
      if (!s) throw Errors.notFound('share');
      const body = await primed(shareJson(s.intent, s.pages()));
      // A stream skips the serialiser: shareJson writes the schema's serialisation itself (the schema stays for the API document).
      return reply.header('cache-control', 'no-store').header('x-robots-tag', 'noindex').type('application/json; charset=utf-8').send(body as never);
    },
  );

  app.get('/share/:token', { config: publicRoute, schema: { hide: true, params: z.object({ token: z.string().max(100) }) } }, async (req, reply) => {
    const s = await resolve(req.params.token);
    reply
      .header('cache-control', 'no-store')
      .header('x-robots-tag', 'noindex, nofollow')
      .header('content-security-policy', "default-src 'none'; img-src data: https:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
      .header('referrer-policy', 'no-referrer')
      .type('text/html; charset=utf-8');
    if (!s) return reply.code(404).send(renderGone());
    const index = await d.turns.forkIndex(s.session, s.branch);
    return reply.send(await primed(sharePage(s.intent, s.expires, index.count, index.lastChild, s.pages(index.last), await shareMarkdown())));
  });
};
