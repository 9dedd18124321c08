import { createRunner } from '../../../runners/index.js';
import type { EgressPort } from '../../../runners/egress.js';
import type { Runner, RunnerCheck } from '../../../runners/types.js';
import type { Config } from '../../platform/config/index.js';
import { defineModule } from '../../platform/lib/modules.js';
import { BackgroundTasks } from './background.js';
import { registerDefaultTools } from './defaults.js';
import { recheckOnRefusal } from './runner-recheck.js';
import { backgroundRoutes } from './routes.js';

export interface RunnerHandle {
  runner: Runner;
  /** The runner as checked at start (health reports it; never probed again there). */
  check: RunnerCheck;
}

declare module '../../platform/lib/modules.js' {
  interface Provides {
    background: BackgroundTasks;
    runner: RunnerHandle;
  }
}

function configuredRunner(config: Config, egress: EgressPort | undefined): Runner {
  const r = config.runner;
  return r.kind === 'docker'
    ? createRunner('docker', {
        home: config.home,
        workspaces: config.workspaces,
        image: r.image,
        dockerHost: r.dockerHost,
        memoryBytes: r.memoryBytes,
        nanoCpus: r.nanoCpus,
        pidsLimit: r.pidsLimit,
        idleStopMs: r.idleMs,
        network: r.network,
        egress,
      })
    : // A refused sandbox is probed again on a later command: a folder fix needs no restart.
      recheckOnRefusal(() => createRunner('local', { home: config.home, workspaces: config.workspaces, network: r.network, egress, allowUnconfined: r.allowUnconfined }));
}

/** The runner of the users' computers (sandboxes), local or docker, through the `runner` wraps of the hooks (metrics, traces). */
export const runnerModule = defineModule({
  name: 'runner',
  needs: [],
  async start(ctx) {
    const { config } = ctx;
    const runner = ctx.hooks.wrap('runner', configuredRunner(config, ctx.hooks.wrap('egress', undefined)));
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

/** The built-in tools and the background tasks some of them start. */
export const backgroundModule = defineModule({
  name: 'background',
  needs: [],
  start({ config, tools }) {
    const background = new BackgroundTasks(config.background);
    registerDefaultTools(tools, config, background);
    return {
      provides: background,
      hooks: [
        {
          on: 'session.deleted',
          name: 'tools.background',
          run: async ({ sessionId, userId }) => {
            await background.stopSession(sessionId);
            await tools.endSession({ userId, sessionId });
          },
        },
      ],
      close: [{ phase: 'infrastructure', name: 'background tasks', close: () => background.close() }],
    };
  },
});

/** The background tasks routes of a session. */
export const toolRoutesModule = defineModule({
  name: 'toolRoutes',
  needs: ['sessions', 'background'],
  start: (ctx) => ({ routes: [{ plugin: backgroundRoutes, opts: { sessions: ctx.get('sessions'), background: ctx.get('background') } }] }),
});
