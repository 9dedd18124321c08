import type { Database } from '../../platform/db/index.js';
import type { UserService } from '../users/service.js';
import { AppError, Errors } from '../../platform/server/errors.js';
import type { SolutionCatalog } from '../solutions/catalog.js';
import type { RoleAccess } from '../solutions/roles.js';

const iso = (d: Date | string) => new Date(d).toISOString();

/**
 * Admins and business-role grants (docs/solutions-and-admin.md). Both are read from the database at each request,
 * so a grant or a new admin takes effect at once, on every node.
 */
export class Admin implements RoleAccess {
  constructor(
    private readonly db: Database,
    private readonly catalog: SolutionCatalog,
    private readonly users: UserService,
  ) {}

  async isAdmin(userId: string): Promise<boolean> {
    return this.users.isAdmin(userId);
  }

  async userExists(userId: string): Promise<boolean> {
    return this.users.exists(userId);
  }

  private async mustExist(userId: string) {
    if (!(await this.userExists(userId))) throw Errors.notFound('user');
  }

  async admins(): Promise<{ user_id: string; username: string; created_at: string }[]> {
    const rows = await this.users.admins();
    return rows.map((r) => ({ user_id: r.id, username: r.username, created_at: iso(r.created_at) }));
  }

  async grantAdmin(userId: string): Promise<void> {
    if (!(await this.users.grantAdmin(userId))) throw Errors.notFound('user');
  }

  /** Removing the last admin is 409 LAST_ADMIN; two concurrent removals never leave none. */
  async revokeAdmin(userId: string): Promise<void> {
    const r = await this.users.revokeAdmin(userId);
    if (r === 'no_user') throw Errors.notFound('user');
    if (r === 'last_admin') throw new AppError(409, 'LAST_ADMIN', 'this is the last admin; make another user admin first');
  }

  private solution(solutionId: string) {
    const s = this.catalog.get(solutionId);
    if (!s) throw Errors.notFound('solution');
    return s;
  }

  async grants(userId: string, solutionId: string): Promise<{ user_id: string; solution_id: string; biz_role_ids: string[]; default_all: boolean }> {
    await this.mustExist(userId);
    const s = this.solution(solutionId);
    const row = (await this.db.sql<{ role_ids: string[] }>('select role_ids from biz_role_grants where user_id = ? and solution_id = ?', [userId, solutionId]))[0];
    // While no list was set every role is allowed; the answer names them all.
    return { user_id: userId, solution_id: s.id, biz_role_ids: row ? row.role_ids : s.roles.map((r) => r.id), default_all: !row };
  }

  async setGrants(userId: string, solutionId: string, roleIds: string[]): Promise<void> {
    await this.mustExist(userId);
    const s = this.solution(solutionId);
    const unknown = roleIds.map((id, i) => ({ id, i })).filter(({ id }) => !s.roles.some((r) => r.id === id));
    if (unknown.length) {
      throw Errors.validation(unknown.map(({ id, i }) => ({ loc: ['body', 'biz_role_ids', i], msg: `solution ${s.id} has no role ${JSON.stringify(id)}`, type: 'value_error' })));
    }
    await this.db.sql(
      `insert into biz_role_grants (user_id, solution_id, role_ids) values (?, ?, cast(? as jsonb))
       on conflict (user_id, solution_id) do update set role_ids = excluded.role_ids, updated_at = now()`,
      [userId, solutionId, JSON.stringify([...new Set(roleIds)])],
    );
  }

  /** RoleAccess: a role is allowed when no list was set for the solution, or the list names it. */
  async allowed(userId: string, solutionId: string, roleId: string): Promise<boolean> {
    const row = (await this.db.sql<{ role_ids: string[] }>('select role_ids from biz_role_grants where user_id = ? and solution_id = ?', [userId, solutionId]))[0];
    return !row || row.role_ids.includes(roleId);
  }
}
