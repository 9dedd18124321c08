import picomatch from 'picomatch';
import type { PathDeny } from '../../../runners/types.js';

/**
 * The tool policy's rule engine (docs/policy.md), as plain functions: what a plugin author reads to
 * know how a call is decided. Nothing here touches the database, the file system or the run.
 *
 * A rule `{tool, pattern?, action}` applies to a call when `tool` names the call's tool (its name,
 * its provider, or a glob over tool names) and, with a `pattern`, the pattern matches one of the
 * call's targets: the simple commands of a Bash line, the workspace path of a file tool, the host
 * of a WebFetch, the arguments' JSON text of anything else (see targets.ts).
 *
 * Each target is decided on its own: a matching `deny` wins, else a matching `ask`, else a
 * matching `allow`, else the install's default; the call gets the strictest of its targets'
 * decisions, so `git status && curl x` is denied by `deny curl*` whatever allows `git*`.
 */

export type Action = 'allow' | 'ask' | 'deny';
export type Source = 'install' | 'user' | 'role' | 'session';

export interface Rule {
  tool: string;
  pattern?: string;
  /** A path rule for every tool it names and, as a deny, for every process of the computer (docs/policy-paths.md). */
  paths?: string;
  action: Action;
  /** `write`: a deny that refuses writes only. */
  access?: 'write';
  /** An ask decided by itself after this long (docs/inbox.md). */
  timeout_seconds?: number;
  on_timeout?: 'deny' | 'allow';
}

export interface SourcedRule extends Rule {
  source: Source;
  /** A person's "Allow for this session": answers an `ask` (never a `deny`) for the session. */
  approved?: boolean;
}

export interface PolicySet {
  /** The install's `default`: what a call no rule matches gets. */
  default: Action;
  rules: SourcedRule[];
}

/** What a call is matched on. `targets: null`: it could not be split, every pattern matches it. */
export interface CallFacts {
  tool: string;
  provider: string;
  targets: string[] | null;
  /** How patterns read the targets: commands, hosts and JSON text, or workspace paths. */
  kind: 'text' | 'path';
  /** A path call that writes (Write, Edit): only then does a write-only deny (`access: "write"`) apply. */
  write?: boolean;
}

export interface Decision {
  action: Action;
  /** The rule that decided (for the default: `{tool: "*", action: default}`), and its source. */
  rule: Rule;
  source: Source;
  /** Each target that asked, with the rule that asked: what "Allow for this session" records. */
  asked: { target: string | null; rule: Rule }[];
  /** No rule decided: the install's default did. */
  byDefault: boolean;
}

const RANK: Record<Action, number> = { allow: 0, ask: 1, deny: 2 };

/**
 * A glob where `*` matches any run of characters (spaces and `/` included), `?` one character and
 * `\` escapes the next: command lines, hosts and tool names are not paths, so `git push*` must
 * match `git push origin main` and `curl*` a URL. Path globs use picomatch (`**`, `[...]`).
 */
export function textGlob(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '\\' && i + 1 < glob.length) re += escapeRe(glob[++i]);
    else if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, 's');
}

const escapeRe = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * textGlob as a test, cheap for the usual shapes: the literal text before the first wildcard is
 * compared first (200 rules are mostly `git push*`-like prefixes), and a prefix followed by one
 * trailing `*` needs nothing more.
 */
function textMatcher(glob: string): (s: string) => boolean {
  const wild = glob.search(/[*?\\]/);
  if (wild < 0) return (s) => s === glob;
  const prefix = glob.slice(0, wild);
  if (wild === glob.length - 1 && glob.endsWith('*')) return (s) => s.startsWith(prefix);
  const re = textGlob(glob);
  return prefix ? (s) => s.startsWith(prefix) && re.test(s) : (s) => re.test(s);
}

/** The exact text as a pattern of the given kind (what "Allow for this session" stores for a rule without one). */
export function exactPattern(target: string, kind: CallFacts['kind']): string {
  return kind === 'path' ? target.replace(/[*?[\]{}()!+@\\]/g, '\\$&') : target.replace(/[*?\\]/g, '\\$&');
}

// Compiled globs are kept: a policy of 200 rules is assembled for every call.
const compiled = { text: new Map<string, (s: string) => boolean>(), path: new Map<string, (s: string) => boolean>() };
function matcher(glob: string, kind: 'text' | 'path'): (s: string) => boolean {
  const cache = compiled[kind];
  let m = cache.get(glob);
  if (!m) {
    m = kind === 'path' ? picomatch(glob, { dot: true }) : textMatcher(glob);
    if (cache.size >= 10_000) cache.clear();
    cache.set(glob, m);
  }
  return m;
}

/** `tool` of a rule names this call's tool: exactly, by provider, or as a glob over tool names. */
export function toolMatches(rule: Pick<Rule, 'tool'>, tool: string, provider: string): boolean {
  return rule.tool === tool || rule.tool === provider || ((rule.tool.includes('*') || rule.tool.includes('?')) && matcher(rule.tool, 'text')(tool));
}

/** A rule's pattern matches a target (no pattern: every target; an unsplittable call: every pattern). */
function patternMatches(rule: Rule, target: string | null, kind: CallFacts['kind'], write = false): boolean {
  if (rule.access === 'write' && kind === 'path' && !write) return false;
  if (rule.paths !== undefined) {
    // A path rule: file tools match it on their path; any other call is held by the sandbox instead.
    if (kind !== 'path') return false;
    return target === null || matcher(rule.paths, 'path')(target);
  }
  if (rule.pattern === undefined) return true;
  // A line the parser cannot split (docs/policy-commands.md) matches every deny and ask pattern and
  // no allow pattern: `allow Bash git *` does not cover `git status; eval "$X"`.
  if (target === null) return rule.action !== 'allow';
  return matcher(rule.pattern, kind)(target);
}

/** Decide one target against the rules that name the tool. */
function decideTarget(policy: PolicySet, rules: SourcedRule[], target: string | null, kind: CallFacts['kind'], write?: boolean): { action: Action; rule: Rule; source: Source; asked?: Rule; byDefault?: boolean } {
  let ask: SourcedRule | null = null;
  let allow: SourcedRule | null = null;
  let approved: SourcedRule | null = null;
  for (const r of rules) {
    if (!patternMatches(r, target, kind, write)) continue;
    if (r.action === 'deny') return { action: 'deny', rule: strip(r), source: r.source };
    if (r.action === 'ask') ask ??= r;
    else if (r.approved) approved ??= r;
    // A session's own rules narrow and never widen: their allow lifts nothing, not even the default.
    else if (r.source !== 'session') allow ??= r;
  }
  const fallback = { tool: '*', action: policy.default };
  const asking = ask ?? (!allow && policy.default === 'ask' ? { ...fallback, source: 'install' as const } : null);
  if (asking) {
    if (approved) return { action: 'allow', rule: strip(approved), source: 'session' };
    return { action: 'ask', rule: strip(asking), source: asking.source, asked: strip(asking), byDefault: !ask };
  }
  if (allow) return { action: 'allow', rule: strip(allow), source: allow.source };
  return { action: policy.default, rule: fallback, source: 'install', byDefault: true };
}

function strip(r: Rule): Rule {
  const out: Rule = r.pattern === undefined ? { tool: r.tool, action: r.action } : { tool: r.tool, pattern: r.pattern, action: r.action };
  if (r.paths !== undefined) out.paths = r.paths;
  if (r.access !== undefined) out.access = r.access;
  if (r.timeout_seconds !== undefined) {
    out.timeout_seconds = r.timeout_seconds;
    out.on_timeout = r.on_timeout ?? 'deny';
  }
  return out;
}

/** The policy's decision for one call: the strictest decision over its targets. */
export function decide(policy: PolicySet, call: CallFacts): Decision {
  const rules = policy.rules.filter((r) => toolMatches(r, call.tool, call.provider));
  const targets: (string | null)[] = call.targets === null ? [null] : call.targets.length ? call.targets : [''];
  let best: ReturnType<typeof decideTarget> | null = null;
  const asked: Decision['asked'] = [];
  for (const t of targets) {
    const d = decideTarget(policy, rules, t, call.kind, call.write);
    if (d.asked) asked.push({ target: t, rule: d.asked });
    if (!best || RANK[d.action] > RANK[best.action]) best = d;
    if (best.action === 'deny') break;
  }
  const b = best!;
  return { action: b.action, rule: b.rule, source: b.source, asked: b.action === 'ask' ? asked : [], byDefault: !!b.byDefault };
}

/** What "Allow for this session" adds: the asking rule's pattern, or the exact target when it had none. */
export function approvalRules(call: CallFacts, d: Decision): Rule[] {
  const out = new Map<string, Rule>();
  for (const a of d.asked) {
    const pattern = a.rule.pattern ?? a.rule.paths ?? (a.target === null || a.target === '' ? undefined : exactPattern(a.target, call.kind));
    const rule: Rule = pattern === undefined ? { tool: call.tool, action: 'allow' } : { tool: call.tool, pattern, action: 'allow' };
    out.set(JSON.stringify(rule), rule);
  }
  return [...out.values()];
}

/** How a decision reads in a tool result and in the audit: `Bash git push* (install)`. */
export function describeRule(rule: Rule, source: Source): string {
  const what = rule.pattern ?? (rule.paths !== undefined ? `paths ${rule.paths}` : undefined);
  return `${rule.tool}${what !== undefined ? ` ${what}` : ''}${rule.access ? ` (${rule.access})` : ''} (${source})`;
}

/** Tools whose patterns are workspace paths; Write and Edit only write. */
export const PATH_TOOL_NAMES = new Set(['Read', 'Write', 'Edit', 'Glob', 'Grep', 'file_ops']);
const WRITE_TOOLS = new Set(['Write', 'Edit']);

export type { PathDeny };

/**
 * The path denies among rules: `deny` rules whose pattern names paths (a file tool's or the
 * provider's pattern, or `paths`). A Write or Edit deny refuses writes only, as does `access: write`.
 */
export function pathDenies(rules: Rule[]): PathDeny[] {
  const out = new Map<string, PathDeny>();
  for (const r of rules) {
    const d = pathDenyOf(r);
    if (d && out.get(d.glob)?.access !== 'all') out.set(d.glob, d);
  }
  return [...out.values()];
}

function pathDenyOf(r: Rule): PathDeny | null {
  if (r.action !== 'deny') return null;
  const glob = r.paths ?? (PATH_TOOL_NAMES.has(r.tool) ? r.pattern : undefined);
  if (glob === undefined) return null;
  return { glob, access: r.access === 'write' || WRITE_TOOLS.has(r.tool) ? 'write' : 'all' };
}

/**
 * The path deny that refuses `rel` (`write`: to change it), as the sandbox holds it: whichever
 * tool the rule names, a path deny is a boundary for every tool and process. Null when none.
 */
export function pathDenyFor<R extends Rule>(rules: R[], rel: string, write: boolean): R | null {
  for (const r of rules) {
    const d = pathDenyOf(r);
    if (d && (write || d.access === 'all') && matcher(d.glob.replace(/^\.\//, ''), 'path')(rel)) return r;
  }
  return null;
}

