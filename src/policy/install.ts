import { type Action, ruleErrors, type Rule } from './rules.js';

/** The install's policy (`AGENTSVC_POLICY` or config.json `policy`, CONTRACT 15). */
export interface InstallPolicy {
  default: Action;
  rules: Rule[];
  /** What an `ask` becomes in a run nobody attends (headless, scheduled, task runs, replays). */
  unattended: 'allow' | 'deny';
}

export const NO_POLICY: InstallPolicy = { default: 'allow', rules: [], unattended: 'deny' };

/** Parse the setting; throws naming the bad rule (`up` stops with that line). */
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
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('must be an object {default, rules, unattended}');
  const { default: def = 'allow', rules = [], unattended = 'deny', ...rest } = v as Record<string, unknown>;
  const errors = Object.keys(rest).map((k) => `${k}: unknown field (a policy has default, rules, unattended)`);
  if (!['allow', 'ask', 'deny'].includes(def as string)) errors.push('default: must be allow, ask or deny');
  if (unattended !== 'allow' && unattended !== 'deny') errors.push('unattended: must be allow or deny');
  errors.push(...ruleErrors(rules));
  if (errors.length) throw new Error(errors.join('; '));
  return { default: def as Action, rules: normalRules(rules as Rule[]), unattended: unattended as 'allow' | 'deny' };
}

/** Rules as stored: only the three fields, `pattern` left out when absent. */
export function normalRules(rules: Rule[]): Rule[] {
  return rules.map((r) => (r.pattern === undefined ? { tool: r.tool.trim(), action: r.action } : { tool: r.tool.trim(), pattern: r.pattern, action: r.action }));
}
