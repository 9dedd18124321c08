import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database, Sql } from '../../platform/db/index.js';
import { Session } from '../../platform/db/entities.js';
import { newId } from '../../platform/lib/ids.js';
import { Errors } from '../../platform/server/errors.js';
import type { CreateSessionInput, ExtraInfoT, ListInput, SessionDetailT, SessionPublicT } from './schemas.js';

/** What a solution role adds to a session at creation (src/features/solutions). */
export interface SessionPlan {
  solution: Record<string, unknown>;
  sessionSetup: Record<string, unknown>;
  /** The role's initial_mode, used when the create body names no mode. */
  mode?: 'planning' | 'executing' | null;
  /** The role chosen when the body named only solution_id. */
  bizRoleId?: string;
  /** Runs once the row exists (installs the role's skills into the session folder). */
  after?: (sessionId: string) => Promise<void>;
}

/** What sessions tell (src/core/engine/hooks.ts `Hooks` is one; sessions do not depend on the engine). */
export interface SessionHooks {
  emit(name: 'session.deleted' | 'session.unshared', payload: { userId: string; sessionId: string }): Promise<void>;
}

export interface SessionServiceOptions {
  /** Told (and awaited) when a session is deleted or stops being shared: the run engine's hooks. */
  hooks?: SessionHooks;
  /** Removes a deleted session's folder (the files module's confined rm -rf). */
  removeFolder?: (userId: string, sessionId: string) => Promise<void>;
  defaultModel: string;
  /** Models a session may name at creation. */
  models: string[];
  /** memory_enabled of a session created without one (AGENTSVC_MEMORY_ENABLED). */
  memoryEnabled: boolean;
  /** A session created with solution_id/biz_role_id: the role's plan, or an error (422/403; src/features/solutions/roles.ts). */
  plan?: (userId: string, input: CreateSessionInput) => Promise<SessionPlan | null>;
  /** Turn text search (the conversation's turn store): sessions among these with a matching turn, newest first. */
  turnText?: (sessionIds: string[], pattern: string, limit: number) => Promise<string[]>;
  /** Whether the user may name this team workspace in a session (its member; src/features/teams). Unset: none may be named. */
  teamWorkspaceAccess?: (userId: string, workspaceId: string) => Promise<boolean>;
  /**
   * The members of a team workspace, asked on behalf of `userId`: their user ids when `userId` is
   * one of them, else null (src/features/teams). Unset: nobody reads another user's session.
   */
  teamWorkspaceReaders?: (userId: string, workspaceId: string) => Promise<string[] | null>;
}

/**
 * `q` also matches turn text, but only the caller's 2000 most recent matching turns (by
 * started_at) are considered: the candidate list stays bounded however long the history is.
 * When more turns match, `content_match_truncated` is true and older sessions that match only
 * by content may be missing from the result.
 */
export const CONTENT_MATCH_LIMIT = 2000;

const iso = (d: Date | string | null): string | null => (d == null ? null : new Date(d).toISOString());
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export function toPublic(s: Session): SessionPublicT {
  return {
    id: s.id,
    intent: s.intent,
    status: s.status,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
    user_id: s.userId,
    solution_id: s.solutionId,
    biz_role_id: s.bizRoleId,
    model: s.model,
    shared: s.shared,
    is_pinned: s.isPinned,
    memory_enabled: s.memoryEnabled,
    is_persistent: s.isPersistent,
    replay_state: s.replayState,
    mode: s.mode,
    template_id: s.templateId,
  };
}

/**
 * The detail as `viewer` sees it: its owner as `owner`; a teammate reading it through a team
 * workspace (docs/identity.md "What each role reads and does") as `reader`, without the session's
 * env, which holds the owner's values.
 */
export function toDetail(s: Session, viewer: string = s.userId): SessionDetailT {
  const owner = viewer === s.userId;
  return {
    ...toPublic(s),
    solution: s.solution ?? {},
    session_setup: s.sessionSetup ?? {},
    primary_skill_snapshot: s.primarySkillSnapshot,
    viewer_role: owner ? 'owner' : 'reader',
    primary_skill_id: s.primarySkillId,
    software_factory_id: s.softwareFactoryId,
    workspace_id: s.workspaceId,
    disable_tools: s.disableTools ?? [],
    ...(s.env && owner ? { env: s.env } : {}),
  };
}

interface ExtraRow {
  id: string;
  extra: Record<string, unknown> | null;
  extra_created_at: Date | null;
  extra_updated_at: Date | null;
}

const toExtra = (r: ExtraRow): ExtraInfoT => ({
  session_id: r.id,
  extra: r.extra ?? {},
  created_at: iso(r.extra_created_at),
  updated_at: iso(r.extra_updated_at),
});

/** Sessions of one user; another user's session is NOT_FOUND (its existence is not revealed). */
export class SessionService {
  private readonly em: () => EntityManager;

  constructor(
    private readonly db: Pick<Database, 'em' | 'sql'>,
    private readonly opts?: SessionServiceOptions,
  ) {
    this.em = () => db.em();
  }

  /** A session's status; undefined when there is none. */
  async status(id: string): Promise<string | undefined> {
    return (await this.db.sql<{ status: string }>('select status from sessions where id = ?', [id]))[0]?.status;
  }

  /** A session's intent (its title), whoever owns it; undefined when there is none. */
  async intentOf(id: string): Promise<string | undefined> {
    return (await this.db.sql<{ intent: string }>('select intent from sessions where id = ?', [id]))[0]?.intent;
  }

  /** A session's owner and env, whoever owns it; undefined when there is none. */
  async envOf(id: string): Promise<{ user_id: string; env: Record<string, string> | null } | undefined> {
    return (await this.db.sql<{ user_id: string; env: Record<string, string> | null }>('select user_id, env from sessions where id = ?', [id]))[0];
  }

  /** The fields of a user's session an archive carries; undefined when the user has no such session. */
  async archived(userId: string, id: string): Promise<{ intent: string; model: string | null; mode: string; created_at: Date; memory_enabled: boolean; is_persistent: boolean; disable_tools: string[]; active_branch: string } | undefined> {
    return (
      await this.db.sql<{ intent: string; model: string | null; mode: string; created_at: Date; memory_enabled: boolean; is_persistent: boolean; disable_tools: string[]; active_branch: string }>(
        'select intent, model, mode, created_at, memory_enabled, is_persistent, disable_tools, active_branch from sessions where id = ? and user_id = ?',
        [id, userId],
      )
    )[0];
  }

  /** An imported session's status and active branch, in the caller's transaction `q`. */
  async settleImported(q: Sql, id: string, status: 'completed' | 'created', activeBranch: unknown): Promise<void> {
    await q('update sessions set status = ?, active_branch = ? where id = ?', [status, activeBranch, id]);
  }

  /** Removes the row of a session whose import failed (the rows of its parts cascade). */
  async discardImported(id: string): Promise<void> {
    await this.db.sql('delete from sessions where id = ?', [id]);
  }

  /** Unpinned sessions not updated for `days`, oldest first; a running one waits for the next sweep. */
  expired(days: number, limit: number): Promise<{ id: string; user_id: string }[]> {
    return this.db.sql(
      `select id, user_id from sessions
        where not is_pinned and status <> 'running' and updated_at < now() - make_interval(days => ?)
        order by updated_at limit ?`,
      [days, limit],
    );
  }

  async memoryEnabled(id: string): Promise<boolean> {
    return (await this.db.sql<{ m: boolean }>('select memory_enabled as m from sessions where id = ?', [id]))[0]?.m === true;
  }

  /** session_setup (null when unset), or undefined when there is no such session. */
  async setupOf(id: string): Promise<{ session_setup: Record<string, unknown> | null } | undefined> {
    return (await this.db.sql<{ session_setup: Record<string, unknown> | null }>('select session_setup from sessions where id = ?', [id]))[0];
  }

  /** Merges top-level keys into session_setup in one statement. */
  async mergeSetup(id: string, setup: Record<string, unknown>): Promise<void> {
    await this.db.sql(`update sessions set session_setup = coalesce(session_setup, '{}'::jsonb) || cast(? as jsonb) where id = ?`, [JSON.stringify(setup), id]);
  }

  async replayState<T>(id: string): Promise<T | null> {
    return (await this.db.sql<{ replay_state: T | null }>('select replay_state from sessions where id = ?', [id]))[0]?.replay_state ?? null;
  }

  /** Sets replay_state, or merges `patch` into it (top-level keys) in one statement. */
  async setReplayState(id: string, state: object, merge = false): Promise<void> {
    const set = merge ? 'replay_state || ?::jsonb' : '?::jsonb';
    await this.db.sql(`update sessions set replay_state = ${set} where id = ?`, [JSON.stringify(state), id]);
  }

  /** Ids of every session of a user. */
  async idsOf(userId: string): Promise<string[]> {
    const rows = await this.em().find(Session, { userId }, { fields: ['id'] });
    return rows.map((r) => r.id);
  }

  /** A user's sessions waiting for an answer, least recently changed first (the inbox; at most `limit`). */
  async waiting(userId: string, limit = 1000): Promise<{ id: string; intent: string }[]> {
    const rows = await this.em().find(Session, { userId, status: 'waiting_for_input' }, { fields: ['id', 'intent'], orderBy: { updatedAt: 'asc' }, limit });
    return rows.map((r) => ({ id: r.id, intent: r.intent }));
  }

  async getOwned(userId: string, id: string, em: EntityManager = this.em()): Promise<Session> {
    const s = await em.findOne(Session, { id, userId });
    if (!s) throw Errors.notFound('session');
    return s;
  }

  /**
   * A session the caller may read (docs/identity.md "What each role reads and does"): their own,
   * or one that belongs to a team workspace of which both the caller and the session's owner are
   * members now. Anything else is 404, exactly as for another user's session: changing it still
   * goes through getOwned.
   */
  async getReadable(userId: string, id: string): Promise<Session> {
    const s = await this.em().findOne(Session, { id });
    if (s && (s.userId === userId || (s.workspaceId != null && (await this.opts?.teamWorkspaceReaders?.(userId, s.workspaceId))?.includes(s.userId)))) return s;
    throw Errors.notFound('session');
  }

  async create(userId: string, input: CreateSessionInput): Promise<string> {
    const models = this.opts?.models ?? [];
    if (input.model != null && !models.includes(input.model)) {
      throw Errors.invalid(['body', 'model'], `unknown model ${JSON.stringify(input.model)}; configured models: ${models.join(', ')}`);
    }
    // A reference in the body is checked like a path id (docs/trust-boundary.md): one the caller may not use is 404.
    if (input.workspace_id != null && !(await this.opts?.teamWorkspaceAccess?.(userId, input.workspace_id))) throw Errors.notFound('workspace');
    const plan = input.solution_id != null || input.biz_role_id != null ? ((await this.opts?.plan?.(userId, input)) ?? null) : null;
    const em = this.em();
    const now = new Date();
    const s = new Session();
    Object.assign(s, {
      id: newId('sess'),
      userId,
      intent: input.intent,
      mode: input.mode ?? plan?.mode ?? 'executing',
      model: input.model ?? this.opts?.defaultModel ?? null,
      solutionId: input.solution_id ?? null,
      bizRoleId: input.biz_role_id ?? plan?.bizRoleId ?? null,
      templateId: input.template_id ?? null,
      primarySkillId: input.primary_skill_id ?? null,
      softwareFactoryId: input.software_factory_id ?? null,
      workspaceId: input.workspace_id ?? null,
      memoryEnabled: input.memory_enabled ?? this.opts?.memoryEnabled ?? false,
      isPersistent: input.is_persistent,
      env: input.env ?? null,
      disableTools: input.disable_tools ?? [],
      ...(plan ? { solution: plan.solution, sessionSetup: plan.sessionSetup } : {}),
      createdAt: now,
      updatedAt: now,
    } satisfies Partial<Session>);
    await em.persistAndFlush(s);
    await plan?.after?.(s.id);
    return s.id;
  }

  async list(userId: string, q: ListInput): Promise<{ items: SessionPublicT[]; total: number; content_match_truncated: boolean }> {
    const em = this.em();
    let where: FilterQuery<Session> = { userId };
    if (q.workspace_id != null) {
      // The sessions of a team workspace whose owners are members now; a workspace the caller is
      // not a member of is 404, as a reference to it in a create body is (docs/trust-boundary.md).
      const readers = await this.opts?.teamWorkspaceReaders?.(userId, q.workspace_id);
      if (!readers) throw Errors.notFound('workspace');
      where = { workspaceId: q.workspace_id, userId: { $in: readers } };
    }
    let truncated = false;
    if (q.template_id_prefix) where.templateId = { $like: `${likeEscape(q.template_id_prefix)}%` };
    if (q.q) {
      const pattern = `%${likeEscape(q.q)}%`;
      const candidates = q.workspace_id != null ? (await em.find(Session, { ...where }, { fields: ['id'] })).map((r) => r.id) : await this.idsOf(userId);
      const hits = (await this.opts?.turnText?.(candidates, pattern, CONTENT_MATCH_LIMIT + 1)) ?? [];
      truncated = hits.length > CONTENT_MATCH_LIMIT;
      const ids = [...new Set(hits.slice(0, CONTENT_MATCH_LIMIT))];
      where.$or = [{ intent: { $ilike: pattern } }, ...(ids.length ? [{ id: { $in: ids } }] : [])];
    }
    const [rows, total] = await em.findAndCount(Session, where, {
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      limit: q.limit,
      offset: q.offset,
    });
    return { items: rows.map(toPublic), total, content_match_truncated: truncated };
  }

  async detail(userId: string, id: string): Promise<SessionDetailT> {
    return toDetail(await this.getOwned(userId, id));
  }

  /** GET /api/sessions/{id}: the detail of a session the caller may read (getReadable). */
  async readDetail(userId: string, id: string): Promise<SessionDetailT> {
    return toDetail(await this.getReadable(userId, id), userId);
  }

  /**
   * Load, change, flush. Only the changed columns are written, so this never overwrites what the
   * chat engine updates concurrently (status, last_seq, run_owner).
   */
  private async change(userId: string, id: string, apply: (s: Session) => void): Promise<Session> {
    const em = this.em();
    const s = await this.getOwned(userId, id, em);
    apply(s);
    s.updatedAt = new Date();
    await em.flush();
    return s;
  }

  async update(userId: string, id: string, patch: { intent?: string }): Promise<SessionDetailT> {
    if (patch.intent === undefined) return this.detail(userId, id);
    return toDetail(await this.change(userId, id, (s) => (s.intent = patch.intent!)));
  }

  async setEnv(userId: string, id: string, env: Record<string, string>): Promise<SessionDetailT> {
    return toDetail(await this.change(userId, id, (s) => (s.env = { ...env })));
  }

  async setPinned(userId: string, id: string, pinned: boolean): Promise<SessionDetailT> {
    return toDetail(await this.change(userId, id, (s) => (s.isPinned = pinned)));
  }

  async setShared(userId: string, id: string, shared: boolean): Promise<boolean> {
    const r = (await this.change(userId, id, (s) => (s.shared = shared))).shared;
    if (!shared) await this.opts?.hooks?.emit('session.unshared', { userId, sessionId: id });
    return r;
  }

  async setMemory(userId: string, id: string, enabled: boolean): Promise<boolean> {
    return (await this.change(userId, id, (s) => (s.memoryEnabled = enabled))).memoryEnabled;
  }

  /**
   * Removes the session (turns and events cascade in the database), then its folder. A running
   * session is refused: its run would go on writing into a folder and rows that no longer exist.
   * The status check and the delete are one statement, so a run cannot start in between.
   * Returns the error of the folder removal, if any: the session itself is gone by then.
   */
  async delete(userId: string, id: string): Promise<{ folderError: Error | null }> {
    const em = this.em();
    const rows = await em
      .getConnection()
      .execute<{ id: string }[]>(`delete from sessions where id = ? and user_id = ? and status <> 'running' returning id`, [id, userId]);
    if (rows.length === 0) {
      await this.getOwned(userId, id, em);
      throw Errors.sessionBusy();
    }
    // Listeners run after the row is gone and before the folder goes (background tasks stop first).
    await this.opts?.hooks?.emit('session.deleted', { userId, sessionId: id });
    try {
      await this.opts?.removeFolder?.(userId, id);
      return { folderError: null };
    } catch (e) {
      return { folderError: e as Error };
    }
  }


  async getExtra(userId: string, id: string): Promise<ExtraInfoT> {
    const s = await this.getOwned(userId, id);
    return toExtra({ id: s.id, extra: s.extra, extra_created_at: s.extraCreatedAt, extra_updated_at: s.extraUpdatedAt });
  }

  /** Merges top-level keys in one statement, so concurrent merges never lose each other's keys. */
  async mergeExtra(userId: string, id: string, extra: Record<string, unknown>): Promise<ExtraInfoT> {
    const rows = await this.em().getConnection().execute<ExtraRow[]>(
        `update sessions set extra = coalesce(extra, '{}'::jsonb) || cast(? as jsonb),
           extra_created_at = coalesce(extra_created_at, now()), extra_updated_at = now(), updated_at = now()
         where id = ? and user_id = ?
         returning id, extra, extra_created_at, extra_updated_at`,
        [JSON.stringify(extra), id, userId],
      );
    if (rows.length === 0) throw Errors.notFound('session');
    return toExtra(rows[0]);
  }

  /**
   * The caller's most recent session whose extra.task_id equals taskId (compared as text). A task
   * id none of the caller's sessions holds is 404, whether another user's sessions hold it or no
   * session does (docs/errors.md: its existence is not revealed).
   */
  async extraByClientTask(userId: string, taskId: string): Promise<ExtraInfoT> {
    const rows = await this.em().getConnection().execute<ExtraRow[]>(
        `select id, extra, extra_created_at, extra_updated_at from sessions
         where user_id = ? and extra ->> 'task_id' = ?
         order by created_at desc, id desc limit 1`,
        [userId, taskId],
      );
    if (rows.length === 0) throw Errors.notFound('task');
    return toExtra(rows[0]);
  }
}
