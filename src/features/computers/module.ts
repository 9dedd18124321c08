import { createRunner } from '../../../runners/index.js';
import type { Runner, RunnerCheck } from '../../../runners/types.js';
import { defineModule } from '../../platform/lib/modules.js';
import { recheckOnRefusal } from './recheck.js';
import { computerRoutes } from './routes.js';

export interface RunnerHandle {
  runner: Runner;
  /** The runner as checked at start (health reports it; never probed again there). */
  check: RunnerCheck;
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    runner: RunnerHandle;
  }
}

/** The runner of the users' computers (sandboxes): local or docker, observed by metrics and traces. */
export const runnerModule = defineModule({
  name: 'runner',
  needs: ['telemetry'],
  async start(ctx) {
    const { config } = ctx;
    const created =
      config.runner.kind === 'docker'
        ? createRunner('docker', {
            home: config.home,
            workspaces: config.workspaces,
            image: config.runner.image,
            dockerHost: config.runner.dockerHost,
            memoryBytes: config.runner.memoryBytes,
            nanoCpus: config.runner.nanoCpus,
            pidsLimit: config.runner.pidsLimit,
            idleStopMs: config.runner.idleMs,
            network: config.runner.network,
          })
        : // A refused sandbox is probed again on a later command: a folder fix needs no restart.
          recheckOnRefusal(() => createRunner('local', { home: config.home, workspaces: config.workspaces, network: config.runner.network, allowUnconfined: config.runner.allowUnconfined }));
    const { metrics, tracing } = ctx.get('telemetry');
    const runner = metrics.observeRunner(tracing ? tracing.runner(created) : created);
    const close = [{ phase: 'infrastructure' as const, name: 'runner', close: () => runner.close() }];
    const check = await runner.check().catch(async (e) => {
      await runner.close();
      throw e;
    });
    if (check.warning) ctx.warnings.push(check.warning);
    if (check.error) ctx.warnings.push(`${config.runner.kind} runner unavailable: ${check.error} (runs that use tools will fail until it is back)`);
    return { provides: { runner, check }, close };
  },
});

/** The computers routes: a user's sandbox state, and clearing its memory (its background tasks). */
export const computersModule = defineModule({
  name: 'computers',
  needs: ['runner', 'sessions', 'background'],
  start(ctx) {
    const sessions = ctx.get('sessions');
    const background = ctx.get('background');
    const clearMemo = async (userId: string) => {
      let n = 0;
      for (const id of await sessions.idsOf(userId)) {
        n += background.list(id).length;
        await background.stopSession(id);
      }
      return n;
    };
    return { routes: [{ plugin: computerRoutes, opts: { runner: ctx.get('runner').runner, clearMemo } }] };
  },
});
