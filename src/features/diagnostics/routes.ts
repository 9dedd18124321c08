import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { Errors } from '../../platform/server/errors.js';
import { CHECKS, type Check, type CheckDeps, type CheckResult, runCheck, runChecks } from './checks.js';
import { type ServiceProbes, serviceChecks } from './service-checks.js';

const CheckParams = z.object({ check_id: z.string().min(1).max(100) });
const CheckOut = z.object({ check_id: z.string(), status: z.enum(['ok', 'warn', 'fail']), detail: z.string(), fix: z.string().nullable() });

/** The shape of docs/memories-and-settings.md: {check_id, status, detail} (and what to do about it). */
const wire = (r: CheckResult) => ({ check_id: r.id, status: r.status, detail: r.message, fix: r.fix });

/** The worst status of a list: fail > warn > ok. */
export function worst(results: CheckResult[]): CheckResult['status'] {
  return results.some((r) => r.status === 'fail') ? 'fail' : results.some((r) => r.status === 'warn') ? 'warn' : 'ok';
}

/**
 * Both routes answer any user: service-wide checks are the same for all, while checks of per-user
 * state (an MCP server's process in each user's computer, with its stderr) show a non-admin their
 * own only (docs/plugins.md).
 *
 * GET /api/env/check: a Server-Sent Events stream, one `check` event per check as it finishes
 * (data: {check_id, status, detail, fix}), then one `end` event {status, counts}. Checks run
 * concurrently and each is bounded in time, so the stream always ends.
 * POST /api/env/check/{check_id}: one check, as a JSON object.
 */
export const diagnosticsRoutes: FastifyPluginAsyncZod<{ deps: CheckDeps; extra: Check[]; dynamic?: () => Check[] }> = async (app, { deps, extra, dynamic }) => {
  const fixed = [...CHECKS, ...extra];
  // Plugin checks and provider health are listed per request: providers come and go.
  const checks = () => [...fixed, ...(dynamic?.() ?? [])];
  const tags = ['environment'];
  const askedBy = (req: FastifyRequest): CheckDeps => {
    const user = me(req);
    return { ...deps, viewer: { userId: user.id, admin: user.isAdmin } };
  };
  app.get(
    '/api/env/check',
    { schema: { tags, summary: 'Environment checks as a Server-Sent Events stream (events `check`, then `done`)', produces: ['text/event-stream'] } },
    async (req, reply) => {
      const asked = askedBy(req);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      const send = (event: string, data: unknown) => {
        if (!res.destroyed && !res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };
      try {
        const results = await runChecks(checks(), asked, (r) => send('check', wire(r)));
        const counts = { ok: 0, warn: 0, fail: 0 };
        for (const r of results) counts[r.status]++;
        send('end', { status: worst(results), counts });
      } catch (e) {
        req.log.error({ err: (e as Error).message }, 'env check failed');
        send('error', { code: 'INTERNAL', message: 'checks could not run' });
      } finally {
        if (!res.writableEnded) res.end();
      }
    },
  );

  app.post('/api/env/check/:check_id', { schema: { tags, params: CheckParams, response: { 200: CheckOut } } }, async (req) => {
    const c = checks().find((x) => x.id === req.params.check_id);
    if (!c) throw Errors.notFound(`check ${req.params.check_id.slice(0, 100)}`);
    return wire(await runCheck(c, askedBy(req)));
  });
};

/** The route module for service.ts, over the service's config, database probe and runner. */
export function diagnosticsModule(
  config: { home: string; runner: { kind: 'local' | 'docker'; allowUnconfined: boolean; dockerHost?: string } },
  probes: { database: () => Promise<unknown>; runner: CheckDeps['runner'] } & ServiceProbes,
  dynamic?: () => Check[],
) {
  const deps: CheckDeps = {
    home: config.home,
    runnerKind: config.runner.kind,
    allowUnconfined: config.runner.allowUnconfined,
    dockerHost: config.runner.dockerHost,
    database: async () => void (await probes.database()),
    runner: probes.runner,
  };
  return { plugin: diagnosticsRoutes, opts: { deps, extra: serviceChecks(probes), dynamic } };
}
