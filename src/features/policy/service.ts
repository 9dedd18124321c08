import type { Database } from '../../platform/db/index.js';
import type { Hooks, HookGates, ToolGateDecision } from '../../core/engine/hooks.js';
import type { PendingApproval, ToolCall } from '../../core/conversation/turns.js';
import type { ApprovalChoice, ApprovalPort } from '../../core/engine/approval.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { redactor, type SecretSources, sessionSecrets } from '../sharing/redact.js';
import { type AuditAction, AuditStore } from './audit-store.js';
import type { InstallPolicy } from '../../platform/config/policy.js';
import type { PathGuard } from '../../core/files/confine.js';
import type { PathDenySet } from '../../../runners/types.js';
import {
  approvalRules,
  type Decision,
  decide,
  describeRule,
  PATH_TOOL_NAMES,
  type PathDeny,
  pathDenies,
  pathDenyFor,
  type PolicySet,
  type Rule,
  type Source,
  type SourcedRule,
  toolMatches,
} from './rules.js';
import { ShellParser } from './shell.js';
import { PolicyStore } from './store.js';
import { callFacts } from './targets.js';

/** The three answers of an approval, in the order of `options` (docs/policy.md). */
export const APPROVAL_OPTIONS = ['Allow once', 'Allow for this session', 'Deny'] as const;

/** An approval just asked, with the rule that asked it (its timeout_seconds and on_timeout). */
export interface AskedApproval {
  userId: string;
  sessionId: string;
  callId: string;
  rule: Rule;
}

export interface PolicyDeps {
  db: Database;
  /** A session's secrets, masked in what the audit keeps. */
  secrets: SecretSources;
  install: InstallPolicy;
  logger: Logger;
  /** Counts decisions by action (`agentsvc_approvals_total`, docs/monitoring.md). */
  count?: (action: AuditAction) => void;
  /** The rules of the session's solution role (`policy` of the role), when it has one. */
  roleRules?: (sessionId: string) => Promise<Rule[]>;
}

type GatePayload = HookGates['tool.before']['payload'];

/**
 * The tool policy (docs/policy.md): assembles the rules of the four sources for a call, decides it
 * with the rule engine (rules.ts), turns `ask` into the install's `unattended` action when nobody
 * attends the run, records every decision, and takes the person's answers to approvals.
 * Plugged into the run engine through the `tool.before` gate only.
 */
export class PolicyService implements ApprovalPort {
  readonly store: PolicyStore;
  readonly audit: AuditStore;
  /** Told when a call pauses for an approval (the inbox's timeouts). */
  private readonly askedListeners: ((a: AskedApproval) => Promise<void>)[] = [];
  /** Who decides the next answer to these calls, when not the person (`timeout`). */
  private readonly deciders = new Map<string, string>();

  private constructor(
    private readonly deps: PolicyDeps,
    private readonly shell: ShellParser,
  ) {
    this.store = new PolicyStore(deps.db);
    this.audit = new AuditStore(deps.db);
  }

  static async create(deps: PolicyDeps): Promise<PolicyService> {
    return new PolicyService(deps, await ShellParser.load());
  }

  /** Ask this policy before every tool call of every run. */
  attach(hooks: Hooks): () => void {
    return hooks.gate('tool.before', (p) => this.gate(p));
  }

  get install(): InstallPolicy {
    return this.deps.install;
  }

  /** Every rule that applies to a session's calls, each with its source. */
  async effective(userId: string, sessionId: string): Promise<PolicySet> {
    const [mine, role] = await Promise.all([this.store.forCall(userId, sessionId), this.deps.roleRules?.(sessionId) ?? []]);
    const tag = (rules: Rule[], source: Source, approved = false): SourcedRule[] => rules.map((r) => (approved ? { ...r, source, approved } : { ...r, source }));
    return {
      default: this.deps.install.default,
      rules: [...tag(this.deps.install.rules, 'install'), ...tag(mine.user, 'user'), ...tag(role, 'role'), ...tag(mine.session, 'session'), ...tag(mine.approvals, 'session', true)],
    };
  }

  /** The `tool.before` gate. */
  async gate(p: GatePayload): Promise<ToolGateDecision | undefined> {
    const set = await this.effective(p.run.userId, p.run.sessionId);
    const named = set.rules.filter((r) => toolMatches(r, p.tool.name, p.tool.provider));
    // The file tools decide again on the entry they open (the check below sees a path resolved now).
    if (PATH_TOOL_NAMES.has(p.tool.name)) p.workspace.folder.pathGuard = this.guard(p, set.rules);
    if (!named.length && set.default === 'allow') return undefined;
    const facts = callFacts(this.shell, p.tool, p.args, p.workspace, named.some((r) => r.pattern !== undefined || r.paths !== undefined));
    const d = decide(set, facts);
    const record = (action: AuditAction, decidedBy = 'policy') => this.record(p.run.userId, p.run.sessionId, p.callId, p.tool.name, p.args, action, d, decidedBy);
    if (d.action === 'allow') {
      // An allow by no rule (the default) is not a decision anyone made: it is not recorded.
      if (!d.byDefault) await record('allowed');
      return undefined;
    }
    if (d.action === 'deny') {
      await record('denied');
      return { action: 'deny', message: `denied by policy: ${describeRule(d.rule, d.source)}` };
    }
    if (p.run.unattended) {
      const action = this.deps.install.unattended;
      await record(action === 'allow' ? 'allowed' : 'denied', 'unattended');
      if (action === 'allow') return undefined;
      return { action: 'deny', message: `denied by policy: ${describeRule(d.rule, d.source)}: nobody attends this run to approve it (unattended: deny)` };
    }
    await record('asked');
    for (const fn of this.askedListeners) await fn({ userId: p.run.userId, sessionId: p.run.sessionId, callId: p.callId, rule: d.rule });
    const question = {
      tool_name: p.tool.name,
      arguments: p.args,
      rule: d.rule,
      source: d.source,
      options: [...APPROVAL_OPTIONS],
      /** What "Allow for this session" adds to the session's rules. */
      session_rules: approvalRules(facts, d),
    };
    return { action: 'ask', question };
  }

  /**
   * The check a file tool makes on the entry it opened: every path deny, whichever tool it names
   * (as the sandbox holds them). An `ask` was asked before the call, on the path then.
   */
  private guard(p: GatePayload, rules: SourcedRule[]): PathGuard | undefined {
    if (!pathDenies(rules).length) return undefined;
    return (rel, write) => {
      const r = pathDenyFor(rules, rel, write);
      if (!r) return null;
      void this.record(p.run.userId, p.run.sessionId, p.callId, p.tool.name, { ...p.args, opened: rel }, 'denied', { rule: r, source: r.source }, 'policy');
      return `denied by policy: ${describeRule(r, r.source)}`;
    };
  }

  /**
   * The path denies every process of a user's computer is held to (docs/policy-paths.md): the
   * install's and the user's for every session folder, and each session's own (its rules and its
   * role's) for its folder. `sessions`: the session folders the computer holds. Empty when no
   * rule names paths: the sandbox is then as before.
   */
  async sandboxDenies(userId: string, sessions: string[]): Promise<PathDenySet> {
    const mine = await this.store.pathRules(userId, sessions);
    const every = pathDenies([...this.deps.install.rules, ...mine.user]);
    const bySession: Record<string, PathDeny[]> = {};
    // Role rules are remembered per session by the solutions module: a lookup, after the first.
    const roles = await Promise.all(sessions.map((id) => this.deps.roleRules?.(id) ?? Promise.resolve([] as Rule[])));
    sessions.forEach((id, i) => {
      const own = pathDenies([...(mine.sessions[id] ?? []), ...roles[i]]);
      if (own.length) bySession[id] = own;
    });
    return { every, sessions: bySession };
  }

  /** Called for every approval asked, before the call pauses; a listener that throws fails the call's gate (it must not). */
  onAsked(fn: (a: AskedApproval) => Promise<void>): void {
    this.askedListeners.push(fn);
  }

  /** The next answer to `callId` in this process is recorded as decided by `by` (e.g. `timeout`), not by the user. */
  decideAs(callId: string, by: string | null): void {
    if (by === null) this.deciders.delete(callId);
    else this.deciders.set(callId, by);
  }

  /** A person answered an approval: record it, and "Allow for this session" adds its rules. */
  async answered(userId: string, sessionId: string, call: ToolCall, ref: PendingApproval, choice: ApprovalChoice): Promise<void> {
    const decidedBy = this.deciders.get(call.id) ?? userId;
    this.deciders.delete(call.id);
    if (choice === 'session') await this.store.addApprovals(sessionId, (ref.session_rules as Rule[] | undefined) ?? []);
    const args = safeJson(call.arguments);
    const d = { rule: ref.rule as Rule, source: ref.source as Source } as Decision;
    await this.record(userId, sessionId, call.id, call.tool_name, args, choice === 'deny' ? 'rejected' : 'approved', d, decidedBy);
  }

  private async record(userId: string, sessionId: string, callId: string, tool: string, args: unknown, action: AuditAction, d: Pick<Decision, 'rule' | 'source'>, decidedBy: string) {
    this.deps.count?.(action);
    try {
      const mask = redactor(await sessionSecrets(this.deps.secrets, sessionId));
      await this.audit.add({ user_id: userId, session_id: sessionId, tool_call_id: callId, tool_name: tool, arguments: JSON.stringify(mask(args)), action, rule: d.rule ?? null, source: d.source ?? null, decided_by: decidedBy });
    } catch (e) {
      // The decision stands; a lost record is logged (the database is the run's own problem then).
      this.deps.logger.error({ ...errField(e), session_id: sessionId, tool_call_id: callId }, 'could not record a policy decision');
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
