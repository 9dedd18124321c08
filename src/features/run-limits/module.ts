import { defineModule } from '../../platform/lib/modules.js';
import { RunLimits } from './limits.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Ceilings on a run (wall clock, tool calls) and the loop detector: gates of the run hooks. */
    runLimits: RunLimits;
  }
}

/** AGENTSVC_RUN_MAX_SECONDS, AGENTSVC_RUN_MAX_TOOL_CALLS, AGENTSVC_LOOP_REPEATS (docs/run-limits.md). */
export const runLimitsModule = defineModule({
  name: 'runLimits',
  needs: ['telemetry', 'solutions'],
  async start(ctx) {
    const { metrics } = ctx.get('telemetry');
    const { roles } = ctx.get('solutions');
    // A solution role's run_limits replace the install's for its sessions' runs.
    const limits = new RunLimits(ctx.config.runLimits, ctx.logger, (l) => metrics.runLimit(l), undefined, (sessionId) => roles.runLimits(sessionId));
    return { provides: limits, hooks: limits.hooks() };
  },
});
