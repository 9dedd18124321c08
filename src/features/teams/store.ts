import type { Database, Sql } from '../../platform/db/index.js';
import type { UserService } from '../users/service.js';
import { randomToken } from '../../platform/lib/ids.js';
import { Errors } from '../../platform/server/errors.js';
import type { TeamWorkspaceT } from './schemas.js';

export const wsId = (prefix: 'ws' | 'iss' | 'irun') => `${prefix}_${randomToken(20)}`;
export const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

interface TeamWorkspaceRow {
  id: string;
  name: string;
  description: string;
  owner_id: string;
  role: 'owner' | 'member';
  member_count: number;
  agent_count: number;
  created_at: Date;
  updated_at: Date;
}

const SELECT = `select w.*, m.role,
    (select count(*)::int from workspace_members x where x.workspace_id = w.id) as member_count,
    (select count(*)::int from workspace_agents a join workspace_members o on o.workspace_id = a.workspace_id and o.user_id = a.owner_id
      where a.workspace_id = w.id) as agent_count
  from workspaces w join workspace_members m on m.workspace_id = w.id and m.user_id = ?`;

const toTeamWorkspace = (r: TeamWorkspaceRow, issueCount: number): TeamWorkspaceT => ({
  id: r.id,
  name: r.name,
  description: r.description,
  owner_id: r.owner_id,
  role: r.role,
  member_count: r.member_count,
  agent_count: r.agent_count,
  issue_count: issueCount,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

export interface AgentRow {
  workspace_id: string;
  agent_id: string;
  owner_id: string;
  name: string;
  added_by: string;
  created_at: Date;
}

/** Workspaces, their members, agents and assistant sessions. Only members see a workspace. */
export class TeamWorkspaceStore {
  constructor(
    private readonly db: Database,
    private readonly users: Pick<UserService, 'getUser' | 'findUser' | 'usernames'>,
    /** Issues per workspace (their own store, src/features/teams/issues.ts). */
    private readonly issueCounts: (workspaceIds: string[]) => Promise<Map<string, number>>,
  ) {}

  private async withCounts(rows: TeamWorkspaceRow[]): Promise<TeamWorkspaceT[]> {
    const counts = rows.length ? await this.issueCounts(rows.map((r) => r.id)) : new Map<string, number>();
    return rows.map((r) => toTeamWorkspace(r, counts.get(r.id) ?? 0));
  }

  /** The next issue number of a workspace, inside the caller's transaction `q`. */
  async nextIssueNumber(q: Sql, workspaceId: string): Promise<number> {
    const [{ issue_seq }] = await q<{ issue_seq: number }>('update workspaces set issue_seq = issue_seq + 1, updated_at = now() where id = ? returning issue_seq', [workspaceId]);
    return issue_seq;
  }

  async create(userId: string, name: string, description: string): Promise<TeamWorkspaceT> {
    const id = wsId('ws');
    await this.db.transaction(async (q) => {
      await q('insert into workspaces (id, name, description, owner_id) values (?, ?, ?, ?)', [id, name, description, userId]);
      await q(`insert into workspace_members (workspace_id, user_id, role) values (?, ?, 'owner')`, [id, userId]);
    });
    return this.get(userId, id);
  }

  async list(userId: string): Promise<TeamWorkspaceT[]> {
    return this.withCounts(await this.db.sql<TeamWorkspaceRow>(`${SELECT} order by w.created_at desc, w.id limit 1000`, [userId]));
  }

  /** The workspace as a member sees it; 404 for anyone else. */
  async get(userId: string, id: string): Promise<TeamWorkspaceT> {
    const [r] = await this.db.sql<TeamWorkspaceRow>(`${SELECT} where w.id = ?`, [userId, id]);
    if (!r) throw Errors.notFound('workspace');
    return (await this.withCounts([r]))[0];
  }

  /** The caller's role in it: 404 when not a member; 403 when `owner` is needed and they are not. */
  async roleOf(userId: string, id: string, need: 'member' | 'owner' = 'member'): Promise<'owner' | 'member'> {
    const [r] = await this.db.sql<{ role: 'owner' | 'member' }>('select role from workspace_members where workspace_id = ? and user_id = ?', [id, userId]);
    if (!r) throw Errors.notFound('workspace');
    if (need === 'owner' && r.role !== 'owner') throw Errors.forbidden('only the owner of the workspace may do this');
    return r.role;
  }

  async update(userId: string, id: string, patch: { name?: string; description?: string }): Promise<TeamWorkspaceT> {
    await this.roleOf(userId, id, 'owner');
    await this.db.sql('update workspaces set name = coalesce(?, name), description = coalesce(?, description), updated_at = now() where id = ?', [patch.name ?? null, patch.description ?? null, id]);
    return this.get(userId, id);
  }

  /** Deletes the workspace (its members' rows cascade); answers who its members were, in the same statement. */
  async remove(userId: string, id: string): Promise<string[]> {
    await this.roleOf(userId, id, 'owner');
    const rows = await this.db.sql<{ user_id: string }>(
      `with gone as (delete from workspaces where id = ? returning id)
       select m.user_id from workspace_members m join gone on gone.id = m.workspace_id`,
      [id],
    );
    return rows.map((r) => r.user_id);
  }

  async members(id: string): Promise<{ user_id: string; username: string; role: 'owner' | 'member'; created_at: Date }[]> {
    const rows = await this.db.sql<{ user_id: string; role: 'owner' | 'member'; created_at: Date }>(
      'select user_id, role, created_at from workspace_members where workspace_id = ? order by created_at, user_id',
      [id],
    );
    const names = await this.users.usernames(rows.map((r) => r.user_id));
    // A member row cascades with its user, so every member has a name.
    return rows.map((r) => ({ user_id: r.user_id, username: names.get(r.user_id) ?? '', role: r.role, created_at: r.created_at }));
  }

  async isMember(id: string, userId: string): Promise<boolean> {
    return (await this.db.sql('select 1 from workspace_members where workspace_id = ? and user_id = ?', [id, userId])).length > 0;
  }

  /** The members' ids when `userId` is one of them (who reads the workspace's sessions), else undefined. */
  async readers(id: string, userId: string): Promise<string[] | undefined> {
    const rows = await this.db.sql<{ user_id: string }>('select user_id from workspace_members where workspace_id = ?', [id]);
    const ids = rows.map((r) => r.user_id);
    return ids.includes(userId) ? ids : undefined;
  }

  /** Adds a user by id or name; an unknown user is a 422 (the caller names them in the body). */
  async addMember(id: string, who: { user_id?: string; username?: string }): Promise<string> {
    const u = who.user_id ? await this.users.getUser(who.user_id) : await this.users.findUser(who.username ?? '');
    if (!u) throw Errors.invalid(['body', who.user_id ? 'user_id' : 'username'], 'no such user');
    const r = await this.db.sql(`insert into workspace_members (workspace_id, user_id, role) values (?, ?, 'member') on conflict do nothing returning user_id`, [id, u.id]);
    if (!r.length) throw Errors.conflict('ALREADY_MEMBER', 'the user is a member already');
    await this.db.sql('update workspaces set updated_at = now() where id = ?', [id]);
    return u.id;
  }

  /**
   * The member leaves, and their agents with them (docs/solutions-and-admin.md), in one transaction: no
   * assignment can see the member gone and their agent still here. Answers the members who stay
   * (they no longer read the sessions of the one who left).
   */
  async removeMember(id: string, userId: string): Promise<string[]> {
    const [r] = await this.db.sql<{ role: string }>('select role from workspace_members where workspace_id = ? and user_id = ?', [id, userId]);
    if (!r) throw Errors.notFound('member');
    if (r.role === 'owner') throw Errors.conflict('OWNER_STAYS', 'the owner cannot leave the workspace; delete it instead');
    return this.db.transaction(async (q) => {
      await q('delete from workspace_members where workspace_id = ? and user_id = ?', [id, userId]);
      await q('delete from workspace_agents where workspace_id = ? and owner_id = ?', [id, userId]);
      return (await q<{ user_id: string }>('select user_id from workspace_members where workspace_id = ?', [id])).map((m) => m.user_id);
    });
  }

  // A workspace's agents are those of its current members: the join keeps a row whose owner is no
  // longer a member (left by a version that kept a leaving member's agents, or an add racing the
  // leave) out of every read.
  private static readonly AGENTS = `select a.* from workspace_agents a join workspace_members m on m.workspace_id = a.workspace_id and m.user_id = a.owner_id
    where a.workspace_id = ?`;

  agents(id: string): Promise<AgentRow[]> {
    return this.db.sql<AgentRow>(`${TeamWorkspaceStore.AGENTS} order by a.created_at, a.agent_id`, [id]);
  }

  async agent(id: string, agentId: string): Promise<AgentRow | null> {
    return (await this.db.sql<AgentRow>(`${TeamWorkspaceStore.AGENTS} and a.agent_id = ?`, [id, agentId]))[0] ?? null;
  }

  /** Adds a member's own agent; `once`: a second add is 409 (POST .../agents), else it is kept as it is (a first assignment). */
  async addAgent(id: string, a: { agent_id: string; owner_id: string; name: string; added_by: string }, once = true): Promise<AgentRow> {
    const [r] = await this.db.sql<AgentRow>(
      `insert into workspace_agents (workspace_id, agent_id, owner_id, name, added_by)
       select ?, ?, ?, ?, ? where exists (select 1 from workspace_members where workspace_id = ? and user_id = ?)
       on conflict do nothing returning *`,
      [id, a.agent_id, a.owner_id, a.name, a.added_by, id, a.owner_id],
    );
    if (r) return r;
    const cur = await this.agent(id, a.agent_id);
    if (!cur) throw Errors.notFound('workspace');
    if (once) throw Errors.conflict('ALREADY_ADDED', 'the agent works in this workspace already');
    return cur;
  }

  async removeAgent(id: string, agentId: string): Promise<boolean> {
    return (await this.db.sql('delete from workspace_agents where workspace_id = ? and agent_id = ? returning agent_id', [id, agentId])).length > 0;
  }

  async assistantSession(id: string, userId: string, role: string): Promise<string | null> {
    const [r] = await this.db.sql<{ session_id: string }>(
      'select session_id from workspace_assistant_sessions where workspace_id = ? and user_id = ? and biz_role_id = ?',
      [id, userId, role],
    );
    return r?.session_id ?? null;
  }

  async setAssistantSession(id: string, userId: string, role: string, sessionId: string): Promise<void> {
    await this.db.sql(
      `insert into workspace_assistant_sessions (workspace_id, user_id, biz_role_id, session_id) values (?, ?, ?, ?)
       on conflict (workspace_id, user_id, biz_role_id) do update set session_id = excluded.session_id, updated_at = now()`,
      [id, userId, role, sessionId],
    );
  }
}
