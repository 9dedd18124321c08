import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyServerOptions, LogController } from 'fastify';
import swagger from '@fastify/swagger';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../config/index.js';
import { type Authenticator, authPlugin, publicRoute } from './auth.js';
import { consoleRoutes } from './console.js';
import { rateLimitPlugin } from './rate-limit.js';
import { installBodyGuards } from './body-guards.js';
import { installErrorHandler } from './error-handler.js';
import { type HealthReport, metaRoutes } from './meta-routes.js';
import { openapiOptions } from './openapi.js';
import { logRequests } from './request-log.js';

export interface RouteModule {
  // biome-ignore lint/suspicious/noExplicitAny: each route plugin has its own options type; the list holds them together
  plugin: FastifyPluginAsync<any>;
  opts: object;
}

export interface AppDeps {
  config: Config;
  users: Authenticator;
  health: () => Promise<HealthReport>;
  /** Domain route plugins, registered after auth, each with its own dependencies. */
  routes?: RouteModule[];
  /** Registered before everything else: its request hook sees every request (a trace span per request). */
  requestHook?: RouteModule;
  logger?: FastifyServerOptions['logger'];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route as `METHOD url` (HEAD aside), as registered: what the role table must decide (docs/identity.md). */
    routeKeys: { key: string; public: boolean }[];
  }
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? false,
    // One line per request is written by request-log.ts; fastify's own pair is off.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.limits.body,
    // Clients that hang mid-request must not hold a connection forever.
    requestTimeout: 120_000,
    connectionTimeout: 0,
    ajv: { customOptions: { removeAdditional: false } },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
  }).withTypeProvider<ZodTypeProvider>();
  app.decorate('routeKeys', [] as { key: string; public: boolean }[]);
  app.addHook('onRoute', (r) => {
    // Read when asked: a scope's own onRoute (the console's) may make its routes public after this one ran.
    const isPublic = () => !!(r.config as { public?: boolean } | undefined)?.public;
    for (const m of [r.method].flat())
      if (m !== 'HEAD')
        app.routeKeys.push({
          key: `${m} ${r.url}`,
          get public() {
            return isPublic();
          },
        });
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  if (deps.requestHook) await app.register(deps.requestHook.plugin, deps.requestHook.opts);
  if (deps.logger) logRequests(app);
  installErrorHandler(app);
  installBodyGuards(app);

  await app.register(swagger, openapiOptions(deps.users.rolesOf?.bind(deps.users)));
  // The document and its page (/api/docs, served by consoleRoutes) are public
  // (docs/trust-boundary.md). /api/docs/json is where the earlier swagger-ui page served it; kept for clients
  // that read it there.
  for (const url of ['/api/openapi.json', '/api/docs/json']) app.get(url, { config: publicRoute, schema: { hide: true } }, async () => app.swagger());

  await app.register(authPlugin, { users: deps.users });
  await app.register(rateLimitPlugin, { perMinute: deps.config.limits.ratePerMinute, redisUrl: deps.config.redisUrl });
  await app.register(metaRoutes, { config: deps.config, health: deps.health });
  await app.register(consoleRoutes);
  for (const r of deps.routes ?? []) await app.register(r.plugin, r.opts);
  return app;
}
