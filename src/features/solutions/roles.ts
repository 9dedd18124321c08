import { posix } from 'node:path';
import type { PromptContext, PromptContributor } from '../../core/engine/system-prompt.js';
import type { SessionFolders } from '../../core/files/session-folder.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import type { SessionPlan, SessionService } from '../../core/sessions/service.js';
import type { Tool, ToolScope } from '../../core/tools/types.js';
import type { Rule } from '../policy/rules.js';
import type { Role, Solution, SolutionCatalog } from './catalog.js';

/** Which roles of a solution a user may use (src/features/admin's grants; every role when none were set). */
export interface RoleAccess {
  allowed(userId: string, solutionId: string, roleId: string): Promise<boolean>;
}

export const allowAll: RoleAccess = { allowed: async () => true };

/** What a session records of its role (session_setup.role) and reads back at each run. */
export interface RoleSetup {
  solution_id: string;
  biz_role_id: string;
  tools: string[] | null;
  skills: string[];
  initial_mode: string | null;
}

interface SessionRoleRow {
  session_setup: Record<string, unknown> | null;
}

/** `tools` of a role: tool names or provider names; null or a "*" entry allows every tool. */
export function roleAllows(tools: string[] | null, t: Pick<Tool, 'name' | 'provider'>): boolean {
  if (tools == null || tools.includes('*')) return true;
  return tools.includes(t.name) || tools.includes(t.provider);
}

/**
 * Solution roles in sessions (docs/solutions-and-admin.md): at creation the role is checked (unknown: 422, not
 * granted: 403) and recorded; at each run its system prompt and skills join the system prompt,
 * and only its tools are offered and may run. Its skills are copied into the session folder
 * under `.skills/<name>` (the session-skill layout of docs/plugins.md).
 */
export class Roles {
  /** Which roles a user may use: the admins' grants (src/features/admin), or every role. */
  readonly access: RoleAccess;

  constructor(
    private readonly deps: {
      catalog: SolutionCatalog;
      sessions: Pick<SessionService, 'setupOf'>;
      workspaces: SessionFolders;
      access?: RoleAccess;
    },
  ) {
    this.access = deps.access ?? allowAll;
  }

  /** The role a body names, checked: unknown ids are a 422 naming the field; a role not granted, 403. */
  async resolve(userId: string, solutionId: string | null | undefined, roleId: string | null | undefined, at: string[] = ['body']): Promise<{ solution: Solution; role: Role }> {
    if (solutionId == null) throw Errors.invalid([...at, 'solution_id'], 'solution_id is required with biz_role_id');
    const solution = this.deps.catalog.get(solutionId);
    if (!solution) throw Errors.invalid([...at, 'solution_id'], `unknown solution ${JSON.stringify(solutionId)}; GET /api/solutions lists them`);
    if (roleId == null) {
      for (const r of solution.roles) if (await this.access.allowed(userId, solution.id, r.id)) return { solution, role: r };
      throw Errors.forbidden(`no role of solution ${solution.id} is granted to this user`);
    }
    const role: Role | undefined = solution.roles.find((r) => r.id === roleId);
    if (!role) throw Errors.invalid([...at, 'biz_role_id'], `solution ${solution.id} has no role ${JSON.stringify(roleId)}; its roles: ${solution.roles.map((r) => r.id).join(', ')}`);
    if (!(await this.access.allowed(userId, solution.id, role.id))) throw new AppError(403, 'ROLE_NOT_ALLOWED', `role ${role.id} of solution ${solution.id} is not granted to this user`);
    return { solution, role };
  }

  /** SessionService.beforeCreate: what a session created with a solution role carries. */
  async plan(userId: string, input: { solution_id?: string | null; biz_role_id?: string | null }): Promise<SessionPlan> {
    const { solution, role } = await this.resolve(userId, input.solution_id, input.biz_role_id);
    const setup: RoleSetup = { solution_id: solution.id, biz_role_id: role.id, tools: role.tools, skills: role.skills, initial_mode: role.initial_mode };
    return {
      solution: { id: solution.id, name: solution.name, version: solution.version, role: { id: role.id, name: role.name } },
      sessionSetup: { role: setup },
      mode: role.initial_mode,
      bizRoleId: role.id,
      after: role.skills.length ? (sessionId) => this.installSkills(userId, sessionId, solution, role.skills) : undefined,
    };
  }

  /** Copies skills of the solution package into the session folder's `.skills/<name>/`. */
  async installSkills(userId: string, sessionId: string, solution: Solution, names: string[]): Promise<void> {
    const computer = await this.deps.workspaces.forSession(userId, sessionId).computer();
    const home = this.deps.workspaces.home(computer);
    for (const name of names) {
      const skill = this.deps.catalog.skill(solution.id, name);
      if (!skill) continue;
      for (const f of skill.files) await home.write(posix.join(sessionId, '.skills', name, f.path), f.content);
    }
  }

  /**
   * What a session was created with never changes afterwards (start-session and ai_assist add to
   * it before they return), so it is read once per session. A run start reads none: its claim
   * read session_setup (`known`), which is kept for the policy's reads during the run.
   */
  private cache = new Map<string, Promise<SessionRoleRow | null>>();

  /** The prompt and the tool filter of a run start ask at once: they share one read. */
  private row(sessionId: string, known?: Record<string, unknown> | null): Promise<SessionRoleRow | null> {
    if (known !== undefined) {
      const row = Promise.resolve({ session_setup: known });
      this.keep(sessionId, row);
      return row;
    }
    const hit = this.cache.get(sessionId);
    if (hit) return hit;
    const read = this.deps.sessions.setupOf(sessionId).then((row) => row ?? null);
    this.keep(sessionId, read);
    // A missing session or a failed read is not kept: the next run reads again.
    void read.then(
      (r) => r ?? this.forget(sessionId, read),
      () => this.forget(sessionId, read),
    );
    return read;
  }

  private keep(sessionId: string, row: Promise<SessionRoleRow | null>) {
    if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(sessionId, row);
  }

  private forget(sessionId: string, read: Promise<SessionRoleRow | null>) {
    if (this.cache.get(sessionId) === read) this.cache.delete(sessionId);
  }

  /** The tool policy rules of the session's role (none without a role). */
  async policy(sessionId: string): Promise<Rule[]> {
    const setup = (await this.row(sessionId))?.session_setup?.role as RoleSetup | undefined;
    return (setup && this.deps.catalog.role(setup.solution_id, setup.biz_role_id)?.role.policy) ?? [];
  }

  private anyRunLimits: boolean | undefined;

  /** The run ceilings of the session's role that replace the install's (null: none, or no role). */
  async runLimits(sessionId: string): Promise<Role['run_limits']> {
    // No role of the catalogue sets any: no read at a run start.
    this.anyRunLimits ??= this.deps.catalog.list().some((s) => s.roles.some((r) => r.run_limits));
    if (!this.anyRunLimits) return null;
    const setup = (await this.row(sessionId))?.session_setup?.role as RoleSetup | undefined;
    return (setup && this.deps.catalog.role(setup.solution_id, setup.biz_role_id)?.role.run_limits) ?? null;
  }

  /** ToolRegistry filter: a role session is offered (and may run) only its role's tools. */
  readonly filter = async (scope: ToolScope, tools: Tool[]): Promise<Tool[]> => {
    const setup = (await this.row(scope.sessionId, scope.setup))?.session_setup?.role as RoleSetup | undefined;
    if (!setup) return tools;
    return tools.filter((t) => roleAllows(setup.tools, t));
  };

  /** System prompt section: the role's prompt, its skills and a production agent's instructions. */
  readonly prompt: PromptContributor = {
    name: 'solution-role',
    contribute: async (ctx: PromptContext) => {
      const row = await this.row(ctx.sessionId, ctx.setup);
      const setup = row?.session_setup?.role as RoleSetup | undefined;
      const parts: string[] = [];
      const found = setup ? this.deps.catalog.role(setup.solution_id, setup.biz_role_id) : null;
      if (found) {
        parts.push(`# Role: ${found.role.name} (solution ${found.solution.name} ${found.solution.version})\n\n${found.role.system_prompt.trim()}`);
        const skills = found.role.skills.map((n) => this.deps.catalog.skill(found.solution.id, n)).filter((s) => s != null);
        if (skills.length) {
          parts.push(
            `## Skills of this role\nEach skill's folder is .skills/<name>/ in your workspace; read its SKILL.md before you use it.\n` +
              skills.map((s) => `- ${s.name}: ${s.description}`).join('\n'),
          );
        }
      }
      const agent = row?.session_setup?.prod_agent as { name?: string; instructions?: string; agent_template?: string } | undefined;
      if (agent) {
        if (agent.agent_template?.trim()) parts.push(`# Agent ${agent.name ?? ''}\n\n${agent.agent_template.trim()}`);
        if (agent.instructions?.trim()) parts.push(`## Instructions\n${agent.instructions.trim()}`);
      }
      const bound = row?.session_setup?.prod_solution as { id: string; name: string; document: string } | undefined;
      if (bound) {
        const doc = bound.document === 'architecture' ? 'architecture' : 'dag';
        parts.push(
          `## Production solution\nThis session designs the production solution "${bound.name}" (id ${bound.id}). Its current ${doc} is ` +
            `GET /api/prod_solution/${doc}/${bound.id}; a new version is saved with PUT on the same path against the latest version.`,
        );
      }
      return parts.length ? parts.join('\n\n') : null;
    },
  };
}
