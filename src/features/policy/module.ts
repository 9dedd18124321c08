import { defineModule } from '../../platform/lib/modules.js';
import { policyRoutes } from './routes.js';
import { PolicyService } from './service.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** Tool policy and approvals (a gate of the run engine's hooks). */
    policy: PolicyService;
  }
}

export const policyModule = defineModule({
  name: 'policy',
  needs: ['solutions', 'telemetry', 'sessions', 'runner', 'settings'],
  async start(ctx) {
    const { roles, admin } = ctx.get('solutions');
    const { metrics } = ctx.get('telemetry');
    const policy = await PolicyService.create({ db: ctx.db, secrets: { sessions: ctx.get('sessions'), buckets: ctx.get('settings') }, install: ctx.config.policy, logger: ctx.logger, count: (a) => metrics.approval(a), roleRules: (id) => roles.policy(id) });
    policy.attach(ctx.hooks);
    // Path denies hold for every process of the computers too (docs/policy-paths.md).
    ctx.get('runner').runner.setPathPolicy((userId, sessions) => policy.sandboxDenies(userId, sessions));
    return {
      provides: policy,
      hooks: [{ on: 'approval.answered', name: 'policy.approvals', run: ({ userId, sessionId, call, ref, choice }) => policy.answered(userId, sessionId, call, ref, choice) }],
      routes: [{ plugin: policyRoutes, opts: { policy, sessions: ctx.get('sessions'), isAdmin: (u: string) => admin.isAdmin(u), userExists: (u: string) => admin.userExists(u) } }],
    };
  },
});
