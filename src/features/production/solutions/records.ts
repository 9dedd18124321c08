import type { Database } from '../../../platform/db/index.js';
import { randomToken } from '../../../platform/lib/ids.js';
import { Errors } from '../../../platform/server/errors.js';
import type { SessionService } from '../../../core/sessions/service.js';
import type { Documents, Kind } from './documents.js';
import type { CreateInput, RecordT } from './schemas.js';

/** The role `ai_assist` binds to a record (shipped in templates/solutions/solution-builder). */
export const ARCHITECT = { solution_id: 'solution-builder', biz_role_id: 'solution-architect' };

interface Row {
  id: string;
  name: string;
  description: string;
  status: RecordT['status'];
  session_id: string | null;
  flow_session_id: string | null;
  architecture_session_id: string | null;
  dag_version: number | null;
  architecture_version: number | null;
  published_dag_version: number | null;
  published_architecture_version: number | null;
  created_at: Date;
  updated_at: Date;
}

const SELECT = `select s.*,
  (select max(version) from prod_solution_versions v where v.solution_id = s.id and v.kind = 'dag') as dag_version,
  (select max(version) from prod_solution_versions v where v.solution_id = s.id and v.kind = 'architecture') as architecture_version,
  (select max(version) from prod_solution_versions v where v.solution_id = s.id and v.kind = 'dag' and v.published) as published_dag_version,
  (select max(version) from prod_solution_versions v where v.solution_id = s.id and v.kind = 'architecture' and v.published) as published_architecture_version
  from prod_solutions s`;

const toRecord = (r: Row): RecordT => ({
  id: r.id,
  name: r.name,
  description: r.description,
  status: r.status,
  session_id: r.session_id,
  flow_session_id: r.flow_session_id,
  architecture_session_id: r.architecture_session_id,
  dag_version: r.dag_version ?? 0,
  architecture_version: r.architecture_version ?? 0,
  published_dag_version: r.published_dag_version,
  published_architecture_version: r.published_architecture_version,
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

/** Production-solution records of a user (docs/solutions-and-admin.md); another user's record is a 404. */
export class ProdSolutions {
  documents!: Documents;

  constructor(
    private readonly db: Database,
    private readonly sessions: SessionService,
  ) {}

  /** Marks the record changed (a document of it was saved or published). */
  async touch(id: string): Promise<void> {
    await this.db.sql('update prod_solutions set updated_at = now() where id = ?', [id]);
  }

  async get(userId: string, id: string): Promise<RecordT> {
    const [r] = await this.db.sql<Row>(`${SELECT} where s.id = ? and s.user_id = ?`, [id, userId]);
    if (!r) throw Errors.notFound('production solution');
    return toRecord(r);
  }

  async list(userId: string): Promise<RecordT[]> {
    return (await this.db.sql<Row>(`${SELECT} where s.user_id = ? order by s.created_at desc, s.id desc`, [userId])).map(toRecord);
  }

  /** A session of the solution-architect role, bound to the record (its system prompt names it). */
  private async assistSession(userId: string, id: string, name: string, kind: Kind | 'solution'): Promise<string> {
    const what = kind === 'solution' ? 'Design' : kind === 'dag' ? 'Flow' : 'Architecture';
    const sid = await this.sessions.create(userId, { intent: `${what}: ${name}`, ...ARCHITECT, is_persistent: false });
    await this.sessions.mergeSetup(sid, { prod_solution: { id, name, document: kind } });
    return sid;
  }

  async create(userId: string, input: CreateInput): Promise<RecordT> {
    for (const f of ['session_id', 'flow_session_id', 'architecture_session_id'] as const) {
      const v = input[f];
      // A session named in the body must be the caller's: checked like a path id, 404 (docs/trust-boundary.md).
      if (v != null) await this.sessions.getOwned(userId, v);
    }
    const id = `psol_${randomToken(20)}`;
    const session = input.session_id ?? (input.ai_assist ? await this.assistSession(userId, id, input.name, 'solution') : null);
    const flow = input.flow_session_id ?? (input.flow_ai_assist ? await this.assistSession(userId, id, input.name, 'dag') : null);
    const arch = input.architecture_session_id ?? (input.architecture_ai_assist ? await this.assistSession(userId, id, input.name, 'architecture') : null);
    await this.db.sql(
      `insert into prod_solutions (id, user_id, name, description, session_id, flow_session_id, architecture_session_id) values (?, ?, ?, ?, ?, ?, ?)`,
      [id, userId, input.name, input.description ?? '', session, flow, arch],
    );
    await this.documents.init(id);
    return this.get(userId, id);
  }

  async update(userId: string, id: string, patch: { name?: string; description?: string; status?: string }): Promise<RecordT> {
    const rows = await this.db.sql(
      `update prod_solutions set name = coalesce(?, name), description = coalesce(?, description), status = coalesce(?, status), updated_at = now()
       where id = ? and user_id = ? returning id`,
      [patch.name ?? null, patch.description ?? null, patch.status ?? null, id, userId],
    );
    if (!rows.length) throw Errors.notFound('production solution');
    return this.get(userId, id);
  }

  async delete(userId: string, id: string): Promise<void> {
    const rows = await this.db.sql('delete from prod_solutions where id = ? and user_id = ? returning id', [id, userId]);
    if (!rows.length) throw Errors.notFound('production solution');
  }

  async setSession(userId: string, id: string, sessionId: string): Promise<void> {
    await this.get(userId, id);
    await this.sessions.getOwned(userId, sessionId);
    await this.db.sql('update prod_solutions set session_id = ?, updated_at = now() where id = ? and user_id = ?', [sessionId, id, userId]);
  }
}
