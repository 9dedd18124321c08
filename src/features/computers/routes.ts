import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Runner } from '../../../runners/types.js';
import { me } from '../../platform/server/auth.js';
import { AppError } from '../../platform/server/errors.js';

const Reset = z.object({ removed_containers: z.number().int(), removed_volume: z.boolean(), cleared_memo: z.number().int() });
const Upgrade = z.object({ upgrade_available: z.boolean(), reason: z.string(), current_version: z.string(), target_version: z.string() });

async function runnerCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err.code === 'RUNNER_UNAVAILABLE') throw new AppError(503, 'RUNNER_UNAVAILABLE', err.message);
    throw e;
  }
}

/** The caller's computer: reset (containers + workspace) and image upgrade. */
export const computerRoutes: FastifyPluginAsyncZod<{ runner: Runner; clearMemo: (userId: string) => Promise<number> }> = async (app, { runner, clearMemo }) => {
  const tags = ['computer'];
  app.post('/api/users/me/reset-computer', { schema: { tags, response: { 200: Reset } } }, async (req) => {
    const userId = me(req).id;
    const r = await runnerCall(() => runner.reset(userId));
    return { ...r, cleared_memo: await clearMemo(userId) };
  });
  app.get('/api/users/me/computer-upgrade', { schema: { tags, response: { 200: Upgrade } } }, async (req) => runnerCall(() => runner.version(me(req).id)));
  app.post('/api/users/me/upgrade-computer', { schema: { tags, response: { 200: Reset } } }, async (req) => ({
    ...(await runnerCall(() => runner.upgrade(me(req).id))),
    cleared_memo: 0,
  }));
};
