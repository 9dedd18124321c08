import { join } from 'node:path';
import type { Config } from '../../platform/config/index.js';
import { defineModule } from '../../platform/lib/modules.js';
import { modelKeyRoutes } from './routes.js';
import { Keyring } from './sealing.js';
import { ModelKeys } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Users' own API keys for model entries with `personal_key` (docs/model-keys.md). */
    modelKeys: ModelKeys;
  }
}

/** Where the generated secret key lives (when AGENTSVC_SECRET_KEY is not set). */
export const SECRET_KEY_FILE = 'secret.key';

export function keyringOf(config: Pick<Config, 'home' | 'secretKey'>): Keyring {
  return new Keyring({ file: join(config.home, SECRET_KEY_FILE), current: config.secretKey?.current, previous: config.secretKey?.previous });
}

/**
 * Personal model keys: the REST routes, the run.before gate that refuses a `required` model
 * without one, and the model.credentials step that hands a run its user's keys.
 */
export const modelKeysModule = defineModule({
  name: 'modelKeys',
  needs: ['policy', 'sessions'],
  start(ctx) {
    const sessions = ctx.get('sessions');
    const keys = new ModelKeys({ db: ctx.db, config: ctx.config, keyring: keyringOf(ctx.config), audit: ctx.get('policy').audit, logger: ctx.logger });
    const taken = keys.models().length > 0;
    return {
      provides: keys,
      routes: [{ plugin: modelKeyRoutes, opts: { keys } }],
      // Without a model that takes personal keys, no run asks anything of this feature.
      hooks: taken
        ? [
            {
              on: 'run.before',
              name: 'model-keys.required',
              // A run is only ever of the user's own session; another is answered 404 after the gate.
              run: async ({ userId, sessionId }) => {
                const s = await sessions.getOwned(userId, sessionId).catch(() => null);
                return s ? keys.refusal(userId, s.model ?? null) : undefined;
              },
            } as const,
            { on: 'model.credentials', name: 'model-keys.credentials', run: ({ run, model }) => keys.forRun(run.runId, run.userId, model) } as const,
            { on: 'run.ended', name: 'model-keys.forget', run: ({ run }) => keys.forget(run.runId) } as const,
          ]
        : [],
    };
  },
});
