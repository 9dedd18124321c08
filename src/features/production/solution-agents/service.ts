import type { Config } from '../../../platform/config/index.js';
import type { Database } from '../../../platform/db/index.js';
import { randomToken } from '../../../platform/lib/ids.js';
import { Errors } from '../../../platform/server/errors.js';
import type { RuntimeT } from '../agents/schemas.js';
import { runtimes } from '../runtimes.js';

interface Row {
  id: string;
  name: string;
  runtime_id: string;
  visibility: string;
  instructions: string;
  archived: boolean;
  created_at: Date;
  updated_at: Date;
}

/**
 * Agents of production solutions (docs/solutions-and-admin.md "Production solutions (multi-agent DAG)"): a name, a runtime this
 * install offers, instructions. A DAG's agent node may name one by `agent_id`.
 */
export class SolutionAgents {
  constructor(
    private readonly db: Database,
    private readonly config: Config,
  ) {}

  runtimes(): RuntimeT[] {
    return runtimes(this.config);
  }

  private view(r: Row) {
    const runtime = this.runtimes().find((x) => x.id === r.runtime_id) ?? null;
    return {
      id: r.id,
      name: r.name,
      runtime_id: r.runtime_id,
      runtime,
      visibility: r.visibility,
      instructions: r.instructions,
      status: r.archived ? 'archived' : 'active',
      archived: r.archived,
      created_at: new Date(r.created_at).toISOString(),
      updated_at: new Date(r.updated_at).toISOString(),
    };
  }

  private checkRuntime(id: string): void {
    const all = this.runtimes();
    if (!all.some((r) => r.id === id)) throw Errors.invalid(['body', 'runtime_id'], `unknown runtime ${JSON.stringify(id)}; GET /api/prod_solution/agents/runtimes lists them: ${all.map((r) => r.id).join(', ')}`);
  }

  async create(userId: string, b: { name: string; runtime_id: string; visibility: string; instructions?: string | null }) {
    this.checkRuntime(b.runtime_id);
    const [r] = await this.db.sql<Row>(
      'insert into prod_solution_agents (id, user_id, name, runtime_id, visibility, instructions) values (?, ?, ?, ?, ?, ?) returning *',
      [`psagent_${randomToken(20)}`, userId, b.name, b.runtime_id, b.visibility, b.instructions ?? ''],
    );
    return this.view(r);
  }

  async list(userId: string, includeArchived: boolean) {
    const rows = await this.db.sql<Row>(`select * from prod_solution_agents where user_id = ?${includeArchived ? '' : ' and not archived'} order by created_at desc, id desc`, [userId]);
    return { items: rows.map((r) => this.view(r)) };
  }

  async get(userId: string, id: string) {
    const [r] = await this.db.sql<Row>('select * from prod_solution_agents where id = ? and user_id = ?', [id, userId]);
    if (!r) throw Errors.notFound('agent');
    return this.view(r);
  }

  async update(userId: string, id: string, p: { name?: string; runtime_id?: string; visibility?: string; instructions?: string; archived?: boolean }) {
    if (p.runtime_id !== undefined) this.checkRuntime(p.runtime_id);
    const [r] = await this.db.sql<Row>(
      `update prod_solution_agents set name = coalesce(?, name), runtime_id = coalesce(?, runtime_id), visibility = coalesce(?, visibility),
         instructions = coalesce(?, instructions), archived = coalesce(?, archived), updated_at = now()
       where id = ? and user_id = ? returning *`,
      [p.name ?? null, p.runtime_id ?? null, p.visibility ?? null, p.instructions ?? null, p.archived ?? null, id, userId],
    );
    if (!r) throw Errors.notFound('agent');
    return this.view(r);
  }

  /** Ids of the user's solution agents that are not archived (a DAG may name them, and production agents). */
  async ids(userId: string): Promise<string[]> {
    const rows = await this.db.sql<{ id: string }>('select id from prod_solution_agents where user_id = ? and not archived', [userId]);
    return rows.map((r) => r.id);
  }
}
