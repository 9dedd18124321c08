import { AppError, Errors } from '../../platform/server/errors.js';
import type { IssueStore } from './issues.js';
import type { CreateIssueT, IssueT, PatchIssueT } from './schemas.js';
import type { AgentPort, IssueTaskRuns } from './issue-task-runs.js';
import type { AgentRow, TeamWorkspaceStore } from './store.js';

export interface SessionsPort {
  create(userId: string, input: { intent: string; solution_id?: string | null; biz_role_id?: string | null; workspace_id?: string | null; is_persistent: boolean }): Promise<string>;
  detail(userId: string, id: string): Promise<{ id: string; workspace_id: string | null } & Record<string, unknown>>;
  getOwned(userId: string, id: string): Promise<unknown>;
  status(id: string): Promise<string | undefined>;
}

export interface TeamWorkspaceServiceDeps {
  store: TeamWorkspaceStore;
  issues: IssueStore;
  runs: IssueTaskRuns;
  agents: AgentPort;
  sessions: SessionsPort;
  /** The solution that has this business role (the assistant session's), or null. */
  solutionOfRole(roleId: string): string | null;
  /**
   * These users may read less than before (src/features/teams/read-access.ts): told once the change
   * is committed, so every node checks their sockets' subscriptions again.
   */
  accessShrank(userIds: string[]): Promise<void>;
}

/**
 * The rules of workspaces and issues: membership (404 for anyone else), who may be assigned
 * (members, and the assigning member's own agents), parents in the same workspace and never a
 * cycle, an assignment to an agent starting a task run, and a leaving member taking their agents
 * and runs along.
 */
export class TeamWorkspaceService {
  constructor(readonly d: TeamWorkspaceServiceDeps) {}

  /** An issue of a workspace the caller is a member of. */
  async issue(userId: string, workspaceId: string, issueId: string): Promise<IssueT> {
    await this.d.store.roleOf(userId, workspaceId);
    return this.d.issues.get(workspaceId, issueId);
  }

  /**
   * A member assignee must be a member. An agent must be a production agent of the assigning
   * member (docs/solutions-and-admin.md; anyone else's is 404, whoever brought it in): it joins the workspace's
   * agents now if it had not yet. Answers the agent's row.
   */
  private async checkAssignee(userId: string, workspaceId: string, type: string | null | undefined, id: string | null | undefined, at: string[]): Promise<AgentRow | null> {
    if (id == null) return null;
    if (type === 'member' && !(await this.d.store.isMember(workspaceId, id))) throw Errors.invalid([...at, 'assignee_id'], 'not a member of this workspace');
    if (type !== 'agent') return null;
    const a = await this.d.agents.owned(userId, id);
    if (!a) throw Errors.notFound('production agent');
    return this.d.store.addAgent(workspaceId, { agent_id: a.id, owner_id: userId, name: a.name, added_by: userId }, false);
  }

  private async checkParent(workspaceId: string, parentId: string | null | undefined, self: string | null) {
    if (parentId == null) return;
    const parent = await this.d.issues.get(workspaceId, parentId).catch(() => null);
    // Checked like a path id (docs/trust-boundary.md): an issue of another workspace, or none, is 404.
    if (!parent) throw Errors.notFound('parent issue');
    if (self && (await this.d.issues.isAncestorOrSelf(self, parentId))) throw Errors.invalid(['body', 'parent_id'], 'an issue cannot be its own parent or the parent of its ancestors');
  }

  /** Fills and checks the assignee fields: an id without a type is a member; a type without an id is refused. */
  private normalizeAssignee<T extends { assignee_type?: string | null; assignee_id?: string | null }>(f: T): T {
    if (f.assignee_id != null && f.assignee_type == null) return { ...f, assignee_type: 'member' };
    if (f.assignee_type != null && f.assignee_id == null) throw Errors.invalid(['body', 'assignee_id'], 'assignee_type needs an assignee_id');
    return f;
  }

  async createIssue(userId: string, workspaceId: string, body: CreateIssueT): Promise<IssueT> {
    const ws = await this.d.store.get(userId, workspaceId);
    const f = this.normalizeAssignee(body);
    await this.checkParent(workspaceId, f.parent_id, null);
    const agent = await this.checkAssignee(userId, workspaceId, f.assignee_type, f.assignee_id, ['body']);
    const issue = await this.d.issues.create(workspaceId, userId, f, (q, id) => this.d.store.nextIssueNumber(q, id));
    if (agent) await this.d.runs.begin(issue, ws.name, agent);
    return this.d.issues.get(workspaceId, issue.id);
  }

  async updateIssue(userId: string, workspaceId: string, issueId: string, patch: PatchIssueT): Promise<IssueT> {
    const ws = await this.d.store.get(userId, workspaceId);
    const cur = await this.d.issues.get(workspaceId, issueId);
    let p = { ...patch };
    // Clearing the assignee id clears its type (and the reverse).
    if ((p.assignee_id === null && p.assignee_type === undefined) || (p.assignee_type === null && p.assignee_id === undefined)) p = { ...p, assignee_id: null, assignee_type: null };
    const merged = this.normalizeAssignee({ assignee_type: p.assignee_type === undefined ? cur.assignee_type : p.assignee_type, assignee_id: p.assignee_id === undefined ? cur.assignee_id : p.assignee_id });
    // Only a changed assignee is checked: editing an issue that someone else's agent works on is not assigning it.
    const changed = merged.assignee_type !== cur.assignee_type || merged.assignee_id !== cur.assignee_id;
    if (changed) p = { ...p, ...merged };
    await this.checkParent(workspaceId, p.parent_id, issueId);
    const agent = changed ? await this.checkAssignee(userId, workspaceId, merged.assignee_type, merged.assignee_id, ['body']) : null;
    const { before, after } = await this.d.issues.update(workspaceId, issueId, p, { type: 'member', id: userId });
    // The stored change decides, not the read before it: of two same assignments at once, one starts a run.
    if (agent && (before.assignee_type !== 'agent' || before.assignee_id !== after.assignee_id)) await this.d.runs.begin(after, ws.name, agent);
    return this.d.issues.get(workspaceId, issueId);
  }

  /**
   * A member leaves (or is removed): their agents leave the workspace and their open task runs stop
   * (docs/solutions-and-admin.md). They no longer read the workspace's sessions, nor the others
   * theirs: both sides' subscriptions are checked again (docs/identity.md).
   */
  async removeMember(workspaceId: string, userId: string): Promise<void> {
    const staying = await this.d.store.removeMember(workspaceId, userId);
    await this.d.accessShrank([userId, ...staying]);
    await this.d.runs.stopOwner(workspaceId, userId, 'the owner of the agent left the workspace');
  }

  /** The owner deletes the workspace: none of its members reads another's sessions through it any more. */
  async removeTeamWorkspace(userId: string, workspaceId: string): Promise<void> {
    await this.d.accessShrank(await this.d.store.remove(userId, workspaceId));
  }

  /**
   * The caller's assistant session of the workspace for a business role, made on first ask; a
   * viewer creates no session (docs/identity.md), so theirs is 403 FORBIDDEN_ROLE until one exists.
   */
  async assistantSession(userId: string, workspaceId: string, roleId: string, viewer = false) {
    const ws = await this.d.store.get(userId, workspaceId);
    const existing = await this.d.store.assistantSession(workspaceId, userId, roleId);
    if (existing) {
      const s = await this.d.sessions.detail(userId, existing).catch(() => null);
      if (s) return s;
    }
    if (viewer) throw new AppError(403, 'FORBIDDEN_ROLE', 'a viewer may not create a session');
    const solution = this.d.solutionOfRole(roleId);
    if (!solution) throw Errors.invalid(['query', 'biz_role_id'], `no solution has the business role ${JSON.stringify(roleId)}`);
    const sid = await this.d.sessions.create(userId, { intent: `${ws.name}: assistant`, solution_id: solution, biz_role_id: roleId, workspace_id: workspaceId, is_persistent: true });
    await this.d.store.setAssistantSession(workspaceId, userId, roleId, sid);
    return this.d.sessions.detail(userId, sid);
  }

  async setAssistantSession(userId: string, workspaceId: string, roleId: string, sessionId: string) {
    await this.d.store.roleOf(userId, workspaceId);
    await this.d.sessions.getOwned(userId, sessionId);
    await this.d.store.setAssistantSession(workspaceId, userId, roleId, sessionId);
    return this.d.sessions.detail(userId, sessionId);
  }
}
