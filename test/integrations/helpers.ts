import type { TestApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { envChecks } from '../plugins/helpers.js';

/** The checks once no integration is loading any more (they load in the background after start). */
export async function integrationsLoaded(app: TestApp, timeoutMs = 30_000): ReturnType<typeof envChecks> {
  return waitFor(
    async () => {
      const checks = await envChecks(app);
      const loading = Object.entries(checks).some(([id, c]) => id.startsWith('integrations:') && c.detail.startsWith('loading'));
      return loading ? null : checks;
    },
    { what: 'the integrations loaded', timeoutMs, everyMs: 50 },
  );
}
