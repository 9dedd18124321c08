import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { publicRoute } from './auth.js';

const Health = z.object({ status: z.string(), checks: z.record(z.string(), z.enum(['ok', 'down'])).optional() });

/** What the service reports of itself: down database = 503; down Redis = 200 `degraded` (local sessions still work). */
export interface HealthReport {
  ok: boolean;
  degraded?: boolean;
  checks: Record<string, 'ok' | 'down'>;
}
const PublicConfig = z.object({
  errorTrackingDsn: z.string(),
  analyticsKey: z.string(),
  analyticsHost: z.string(),
  asrEnabled: z.boolean(),
  asrProvider: z.string(),
  gisMapUrl: z.string(),
  platformOsPath: z.string(),
  publicSharingEnabled: z.boolean(),
  memoryEnabled: z.boolean(),
  /** Sign-in with the provider (docs/identity.md): whether it is on, the button's name, and whether keys may sign in. */
  oidcEnabled: z.boolean(),
  oidcName: z.string().nullable(),
  keySigninEnabled: z.boolean(),
});
const Models = z.object({
  default: z.string(),
  models: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      context_window: z.number().int(),
      /** Per million tokens (docs/models-and-usage.md); null when the install set none. */
      price: z.object({ input: z.number(), output: z.number(), cached_input: z.number() }).nullable(),
    }),
  ),
});

export const metaRoutes: FastifyPluginAsyncZod<{ config: Config; health: () => Promise<HealthReport> }> = async (app, { config, health }) => {
  const healthHandler = async (_req: unknown, reply: { code(n: number): unknown }) => {
    const h = await health();
    if (!h.ok) reply.code(503);
    return { status: h.ok && !h.degraded ? 'ok' : 'degraded', checks: h.checks };
  };
  app.get('/api/health', { config: publicRoute, schema: { tags: ['meta'], response: { 200: Health, 503: Health } } }, healthHandler);
  app.get('/healthz', { config: publicRoute, schema: { tags: ['meta'], response: { 200: Health, 503: Health } } }, healthHandler);

  app.get('/api/config', { config: publicRoute, schema: { tags: ['meta'], response: { 200: PublicConfig } } }, async () => ({
    errorTrackingDsn: '',
    analyticsKey: '',
    analyticsHost: '',
    asrEnabled: false,
    asrProvider: '',
    gisMapUrl: '',
    platformOsPath: '',
    publicSharingEnabled: config.publicSharing,
    memoryEnabled: config.memoryEnabled,
    oidcEnabled: !!config.identity.oidc,
    oidcName: config.identity.oidc?.name ?? null,
    keySigninEnabled: config.identity.keySignin,
  }));

  app.get('/api/config/models', { schema: { tags: ['meta'], response: { 200: Models } } }, async () => ({
    default: config.model.default,
    // Never a URL or a key: the entries' endpoints are the install's business.
    models: config.model.entries.map((m) => ({ id: m.id, name: m.id, context_window: m.contextWindow, price: m.price })),
  }));
};
