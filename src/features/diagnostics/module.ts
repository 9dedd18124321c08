import { pluginChecks } from './plugin-checks.js';
import { defineModule } from '../../platform/lib/modules.js';
import { diagnosticsModule as diagnosticsRoutes } from './routes.js';

export interface Health {
  /** GET /api/health: the database probed, the rest as last known (runner at start, models by their last call). */
  check(): Promise<{ ok: boolean; degraded: boolean; checks: Record<string, 'ok' | 'down'> }>;
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    diagnostics: Health;
  }
}

/** Health and the diagnostics routes (doctor's checks, served). */
export const diagnosticsModule = defineModule({
  name: 'diagnostics',
  needs: ['runner', 'events', 'plugins', 'telemetry'],
  start(ctx) {
    const { config, db } = ctx;
    const { runner, check } = ctx.get('runner');
    const { bus } = ctx.get('events');
    const { modelStates } = ctx.get('telemetry');
    const health: Health = {
      async check() {
        const database = await db.sql('select 1').then(
          () => 'ok' as const,
          () => 'down' as const,
        );
        const checks: Record<string, 'ok' | 'down'> = { database };
        if (config.redisUrl) checks.redis = bus.healthy() ? 'ok' : 'down';
        // Last known, never probed here: the runner as checked at start, models as their last call went.
        checks.runner = check.error ? 'down' : 'ok';
        Object.assign(checks, modelStates.checks());
        return { ok: database === 'ok', degraded: Object.values(checks).includes('down'), checks };
      },
    };
    return {
      provides: health,
      routes: [
        diagnosticsRoutes(
          config,
          {
            database: () => db.sql('select 1'),
            runner: () => runner.check(),
            redis: () => (config.redisUrl ? bus.healthy() : null),
            model: { baseUrl: config.model.baseUrl, apiKey: config.model.apiKey },
            searchBackend: config.web.searchBackend,
          },
          pluginChecks(ctx.get('plugins').checks, ctx.tools),
        ),
      ],
    };
  },
});
