import { z } from 'zod';

/**
 * The install's tool policy (`AGENTSVC_POLICY` or config.json `policy`, docs/policy.md) and the shape
 * of a rule, which every source of rules shares (REST bodies, solution roles). Here, not in
 * src/features/policy, so that reading the configuration needs nothing of the policy module.
 */

export const RuleSchema = z
  .object({
    tool: z.string().trim().min(1).max(200).describe('a tool name, a provider name or a glob over tool names'),
    pattern: z.string().min(1).max(2000).optional().describe('Bash: glob over each simple command; file tools: glob over the workspace path; WebFetch: glob over the host; else over the arguments JSON'),
    action: z.enum(['allow', 'ask', 'deny']),
    // Path rules for every tool and process (docs/policy-paths.md).
    paths: z.string().min(1).max(2000).optional().describe('a glob over workspace-relative paths: a path rule for every tool and every process of the computer'),
    access: z.literal('write').optional().describe('with action deny: only writes are refused (processes may read)'),
    // Approval timeouts (docs/inbox.md).
    timeout_seconds: z.number().int().min(1).max(30 * 86400).optional().describe('with action ask: an approval not answered in this many seconds is decided by on_timeout'),
    on_timeout: z.enum(['deny', 'allow']).optional().describe('with timeout_seconds: what an unanswered approval becomes (default deny)'),
  })
  .strict()
  .refine((r) => r.paths === undefined || r.pattern === undefined, { message: 'a rule has either pattern or paths, not both', path: ['paths'] })
  .refine((r) => r.access === undefined || r.action === 'deny', { message: 'access applies to deny rules only', path: ['access'] })
  .refine((r) => r.timeout_seconds === undefined || r.action === 'ask', { message: 'timeout_seconds applies to ask rules only', path: ['timeout_seconds'] })
  .refine((r) => r.on_timeout === undefined || r.timeout_seconds !== undefined, { message: 'on_timeout needs timeout_seconds', path: ['on_timeout'] });

export type PolicyRule = z.output<typeof RuleSchema>;

const InstallPolicySchema = z
  .object({
    default: z.enum(['allow', 'ask', 'deny']).default('allow'),
    rules: z.array(RuleSchema).max(1000).default([]),
    unattended: z.enum(['allow', 'deny']).default('deny'),
    /** What the egress proxy does with a host no `network`/`WebFetch` host rule names (docs/policy-network.md). */
    network_default: z.enum(['allow', 'deny']).default('allow'),
  })
  .strict();

export type InstallPolicy = z.output<typeof InstallPolicySchema>;

export const NO_POLICY: InstallPolicy = { default: 'allow', rules: [], unattended: 'deny', network_default: 'allow' };

/** Parse the setting; throws naming the bad rule (`rules.2.action: ...`), and `up` stops with that line. */
export function parseInstallPolicy(value: unknown): InstallPolicy {
  let v = value;
  if (v === undefined || v === null || v === '') return NO_POLICY;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      throw new Error(`not valid JSON (${(e as Error).message})`);
    }
  }
  const r = InstallPolicySchema.safeParse(v);
  if (!r.success) throw new Error(r.error.issues.map((i) => `${i.path.join('.') || '(policy)'}: ${i.message}`).join('; '));
  return { ...r.data, rules: normalRules(r.data.rules) };
}

/** Rules as stored: their fields only, the optional ones left out when absent. */
export function normalRules(rules: PolicyRule[]): PolicyRule[] {
  return rules.map((r) => ({
    tool: r.tool,
    ...(r.pattern === undefined ? {} : { pattern: r.pattern }),
    ...(r.paths === undefined ? {} : { paths: r.paths }),
    action: r.action,
    ...(r.access === undefined ? {} : { access: r.access }),
    ...(r.timeout_seconds === undefined ? {} : { timeout_seconds: r.timeout_seconds, on_timeout: r.on_timeout ?? 'deny' }),
  }));
}
