import { errField, type Logger } from '../../platform/lib/logger.js';
import { defineModule } from '../../platform/lib/modules.js';
import type { PolicyService } from '../policy/service.js';
import { judgeHost } from './judge.js';
import { type EgressDecide, EgressProxy } from './proxy.js';

declare module '../../platform/lib/modules.js' {
  interface Provides {
    /** The egress proxy every computer's network goes through (docs/policy-network.md). */
    egress: EgressProxy;
    egressPolicy: true;
  }
}

/**
 * The decision the proxy asks for each connection: the rules of the computer's run (every source),
 * judged by judge.ts; a refusal is an audit record `{action: "denied", tool_name: "network",
 * arguments: {host, port}}` with the run's user, session and tool call (null when unknown).
 */
export function policyDecide(policy: PolicyService, o: { allowPrivate: boolean; logger?: Logger; isBlocked?: (ip: string) => boolean }): EgressDecide {
  return async (who, target) => {
    const session = who.sessionId ?? '';
    const set = await policy.effective(who.userId, session);
    const v = judgeHost({ rules: set.rules, networkDefault: policy.install.network_default, allowPrivate: o.allowPrivate, host: target.host, addresses: target.addresses, isBlocked: o.isBlocked });
    if (v.allow) return { allow: true };
    await policy.audit
      .add({
        user_id: who.userId,
        session_id: session,
        tool_call_id: who.toolCallId,
        tool_name: 'network',
        arguments: JSON.stringify({ host: target.host, port: target.port }),
        action: 'denied',
        rule: v.rule,
        source: v.source,
        decided_by: 'policy',
      })
      // The refusal stands; a lost record is logged.
      .catch((e) => o.logger?.error({ ...errField(e), session_id: session }, 'could not record a refused connection'));
    return { allow: false, message: `${v.message}: ${target.host}:${target.port}` };
  };
}

/**
 * The proxy itself needs nothing, so the runner can use it (the policy starts after the runner);
 * until the policy is bound it refuses every connection: never an open network.
 */
export const egressModule = defineModule({
  name: 'egress',
  needs: [],
  // Its proxy is handed to the runner through the `egress` wrap, which must be in before the runner starts.
  before: ['runner'],
  start() {
    const proxy = new EgressProxy();
    return {
      provides: proxy,
      hooks: [{ on: 'egress', name: 'egress.proxy', run: () => proxy } as const],
      close: [{ phase: 'infrastructure' as const, name: 'egress', close: async () => proxy.close() }],
    };
  },
});

/** Binds the tool policy's host rules and audit to the proxy. */
export const egressPolicyModule = defineModule({
  name: 'egressPolicy',
  needs: ['egress', 'policy'],
  start(ctx) {
    ctx.get('egress').bind(policyDecide(ctx.get('policy'), { allowPrivate: ctx.config.web.allowPrivate, logger: ctx.logger }));
    return { provides: true as const };
  },
});
