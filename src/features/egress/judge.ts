/**
 * How the egress proxy decides one connection (docs/policy-network.md), as a plain function over
 * the rules the policy assembled for the run (every source: install, user, role, session).
 *
 * - Host rules are `{tool: "network", pattern: <host glob>, action}` and the `WebFetch` rules that
 *   have a pattern (a glob over the host). A pattern is matched against the host name asked for and
 *   against every address it resolved to; a raw IP is judged as an address.
 * - A matching `deny` on any of them wins. `ask` counts as `deny`: nobody answers a socket.
 * - Else a matching `allow` (not a session's own rule, which narrows and never widens; a person's
 *   "Allow for this session" does count) lets it through; else `network_default` decides.
 * - Private, loopback and link-local addresses (the WebFetch SSRF guard's list) are refused unless
 *   the operator allowed them (AGENTSVC_WEBFETCH_ALLOW_PRIVATE) or a `network` allow rule names the
 *   host or that address explicitly (a pattern of more than wildcards).
 */
import { isBlockedAddress } from '../../core/tools/web/address.js';
import { describeRule, textGlob, type Rule, type Source, type SourcedRule } from '../policy/rules.js';

export interface HostVerdict {
  allow: boolean;
  /** Why, as the audit and the refused client read it. */
  message: string;
  rule: Rule | null;
  source: Source | null;
}

export interface JudgeInput {
  rules: SourcedRule[];
  networkDefault: 'allow' | 'deny';
  allowPrivate: boolean;
  host: string;
  addresses: string[];
  /** Which addresses the SSRF rule refuses (tests swap it); default the WebFetch guard's. */
  isBlocked?: (ip: string) => boolean;
}

const globs = new Map<string, RegExp>();
function matches(pattern: string, target: string): boolean {
  let re = globs.get(pattern);
  if (!re) {
    if (globs.size > 5000) globs.clear();
    re = textGlob(pattern.toLowerCase());
    globs.set(pattern, re);
  }
  return re.test(target);
}

/** The rules that speak of hosts: `network` rules, and `WebFetch` rules with a pattern. */
export function hostRules(rules: SourcedRule[]): SourcedRule[] {
  return rules.filter((r) => r.tool === 'network' || ((r.tool === 'WebFetch' || r.tool === 'webfetch') && r.pattern !== undefined));
}

const counts = (r: SourcedRule) => r.source !== 'session' || r.approved === true;

export function judgeHost(i: JudgeInput): HostVerdict {
  const rules = hostRules(i.rules);
  const targets = [i.host, ...i.addresses.filter((a) => a !== i.host)];
  const hit = (r: SourcedRule, t: string) => r.pattern === undefined || matches(r.pattern, t);
  for (const r of rules) {
    if (r.action === 'allow') continue;
    const t = targets.find((x) => hit(r, x));
    if (t !== undefined) return refuse(`denied by policy: ${describeRule(r, r.source)}${t !== i.host ? ` (${i.host} is ${t})` : ''}`, r);
  }
  const allow = rules.find((r) => r.action === 'allow' && counts(r) && targets.some((t) => hit(r, t)));
  const blocked = i.addresses.filter(i.isBlocked ?? isBlockedAddress);
  if (blocked.length && !i.allowPrivate) {
    const named = (a: string) =>
      rules.some((r) => r.tool === 'network' && r.action === 'allow' && counts(r) && r.pattern !== undefined && /[^*]/.test(r.pattern) && (matches(r.pattern, a) || matches(r.pattern, i.host)));
    const bad = blocked.find((a) => !named(a));
    if (bad !== undefined) {
      return { allow: false, message: `refused: ${i.host}${bad !== i.host ? ` resolves to ${bad}, which` : ''} is not a public internet address`, rule: null, source: null };
    }
  }
  if (allow) return { allow: true, message: `allowed by ${describeRule(allow, allow.source)}`, rule: strip(allow), source: allow.source };
  if (i.networkDefault === 'deny') {
    return { allow: false, message: `denied by policy: no network rule allows ${i.host} (network_default: deny)`, rule: { tool: 'network', action: 'deny' }, source: 'install' };
  }
  return { allow: true, message: 'network_default: allow', rule: null, source: null };

  function refuse(message: string, r: SourcedRule): HostVerdict {
    return { allow: false, message, rule: strip(r), source: r.source };
  }
}

function strip(r: SourcedRule): Rule {
  return r.pattern === undefined ? { tool: r.tool, action: r.action } : { tool: r.tool, pattern: r.pattern, action: r.action };
}
