import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TurnSchema } from '../../core/events/catalogue.js';
import { text } from '../../platform/lib/storable.js';
import { me } from '../../platform/server/auth.js';
import { SessionParams } from '../../core/sessions/schemas.js';
import type { TimeTravel } from './service.js';

const Skipped = z.array(z.object({ path: z.string(), size: z.number(), reason: z.string() }));
const Checkpoint = z.object({
  checkpoint_id: z.string(),
  turn_id: z.string(),
  created_at: z.string(),
  branch_id: z.string(),
  label: z.string(),
  files: z.number().int(),
  skipped: Skipped,
});
const Ref = z.object({ checkpoint_id: text(100, 1) }).strict();
const Rewound = z.object({
  session_id: z.string(),
  checkpoint_id: z.string(),
  turn_id: z.string(),
  branch_id: z.string(),
  removed_turns: z.number().int(),
  restored_files: z.number().int(),
  message: z.string(),
  stopped_background_tasks: z.number().int(),
});
const Switched = z.object({ session_id: z.string(), branch_id: z.string(), turns: z.number().int(), restored_files: z.number().int(), stopped_background_tasks: z.number().int() });
const Checkout = z.object({ checkpoint_id: z.string(), position: z.enum(['before', 'turn_end']), turns: z.array(TurnSchema), files: z.array(z.object({ path: z.string(), size: z.number() })) });

/** Checkpoints, rewind, checkout, switch-branch (docs/time-travel.md). */
export const timeTravelRoutes: FastifyPluginAsyncZod<{ timetravel: TimeTravel }> = async (app, { timetravel }) => {
  const tags = ['sessions'];
  const params = SessionParams;
  app.get('/api/sessions/:session_id/checkpoints', { schema: { tags, params, response: { 200: z.array(Checkpoint) } } }, async (req) =>
    timetravel.list(me(req).id, req.params.session_id),
  );
  app.post('/api/sessions/:session_id/rewind', { schema: { tags, params, body: Ref, response: { 200: Rewound } } }, async (req) =>
    timetravel.rewind(me(req).id, req.params.session_id, req.body.checkpoint_id),
  );
  app.post(
    '/api/sessions/:session_id/checkout',
    { schema: { tags, params, body: Ref.extend({ position: z.enum(['before', 'turn_end']).default('before') }), response: { 200: Checkout } } },
    async (req) => timetravel.checkout(me(req).id, req.params.session_id, req.body.checkpoint_id, req.body.position),
  );
  app.post('/api/sessions/:session_id/switch-branch', { schema: { tags, params, body: Ref, response: { 200: Switched } } }, async (req) =>
    timetravel.switchBranch(me(req).id, req.params.session_id, req.body.checkpoint_id),
  );
};
