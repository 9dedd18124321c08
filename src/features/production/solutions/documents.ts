import type { z } from 'zod';
import type { ArchDoc, DagDoc } from './schemas.js';
import type { Database } from '../../../platform/db/index.js';
import { AppError, Errors } from '../../../platform/server/errors.js';
import { type DocError, type References, validateArchitecture, validateDag } from './validate.js';

export type Kind = 'dag' | 'architecture';
/** A version as answered: its document under the key `dag` or `architecture` (the one of its kind). */
export type DocView = z.output<typeof DagDoc> & z.output<typeof ArchDoc>;

interface VersionRow {
  version: number;
  document: Record<string, unknown>;
  message: string;
  published: boolean;
  published_at: Date | null;
  created_at: Date;
}

export const EMPTY: Record<Kind, Record<string, unknown>> = {
  dag: { steps: [], nodes: [], edges: [], viewport: {} },
  architecture: { nodes: [], viewport: {} },
};

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

/**
 * The versioned documents of a production solution (docs/solutions-and-admin.md): a save names the version it
 * was based on and creates latest+1, or fails with 409 VERSION_CONFLICT. The check and the insert
 * are one statement over the (solution, kind, version) primary key, so of two saves on the same
 * base exactly one wins, on any number of nodes.
 */
export class Documents {
  constructor(
    private readonly db: Database,
    /** Marks the record changed (its updated_at; the records' store). */
    private readonly touch: (id: string) => Promise<void>,
    /** Throws NOT_FOUND unless the caller owns the record. */
    private readonly owned: (userId: string, id: string) => Promise<unknown>,
    /** Roles and agents an agent node may name, for this user. */
    private readonly references: (userId: string) => Promise<References>,
  ) {}

  private async latest(id: string, kind: Kind): Promise<number> {
    const [r] = await this.db.sql<{ v: number | null }>('select max(version) as v from prod_solution_versions where solution_id = ? and kind = ?', [id, kind]);
    return r?.v ?? 0;
  }

  private async publishedVersion(id: string, kind: Kind): Promise<number | null> {
    const [r] = await this.db.sql<{ v: number | null }>('select max(version) as v from prod_solution_versions where solution_id = ? and kind = ? and published', [id, kind]);
    return r?.v ?? null;
  }

  private async row(id: string, kind: Kind, version: number): Promise<VersionRow | null> {
    return (await this.db.sql<VersionRow>('select * from prod_solution_versions where solution_id = ? and kind = ? and version = ?', [id, kind, version]))[0] ?? null;
  }

  private async view(id: string, kind: Kind, r: VersionRow): Promise<DocView> {
    const v = {
      prod_solution_id: id,
      version: r.version,
      message: r.message,
      published: r.published,
      published_at: iso(r.published_at),
      published_version: await this.publishedVersion(id, kind),
      created_at: iso(r.created_at)!,
      [kind]: r.document,
    };
    return v as unknown as DocView;
  }

  /** Version 1 of each document, empty: the base of the first save (base_version is at least 1). */
  async init(id: string): Promise<void> {
    for (const kind of ['dag', 'architecture'] as const) {
      await this.db.sql(`insert into prod_solution_versions (solution_id, kind, version, document, message) values (?, ?, 1, cast(? as jsonb), 'created')`, [id, kind, JSON.stringify(EMPTY[kind])]);
    }
  }

  async current(userId: string, id: string, kind: Kind) {
    await this.owned(userId, id);
    const r = await this.row(id, kind, await this.latest(id, kind));
    if (!r) throw Errors.notFound(kind);
    return this.view(id, kind, r);
  }

  /** Insert latest+1 iff latest is still `base`; null when another save got there first. */
  private async insertNext(id: string, kind: Kind, base: number, doc: unknown, message: string): Promise<VersionRow | null> {
    const rows = await this.db.sql<VersionRow>(
      `insert into prod_solution_versions (solution_id, kind, version, document, message)
       select ?, ?, ? + 1, cast(? as jsonb), ?
       where (select max(version) from prod_solution_versions where solution_id = ? and kind = ?) = ?
       on conflict do nothing returning *`,
      [id, kind, base, JSON.stringify(doc), message, id, kind, base],
    );
    if (rows[0]) await this.touch(id);
    return rows[0] ?? null;
  }

  async save(userId: string, id: string, kind: Kind, base: number, doc: Record<string, unknown>, message?: string | null) {
    await this.owned(userId, id);
    const r = await this.insertNext(id, kind, base, { ...EMPTY[kind], ...doc }, message ?? '');
    if (!r) {
      const latest = await this.latest(id, kind);
      throw new AppError(409, 'VERSION_CONFLICT', `base_version ${base} is not the latest ${kind} version (${latest}); reload it and save against ${latest}`);
    }
    return this.view(id, kind, r);
  }

  async check(userId: string, kind: Kind, doc: unknown): Promise<DocError[]> {
    return kind === 'dag' ? validateDag(doc, await this.references(userId)) : validateArchitecture(doc);
  }

  async validate(userId: string, id: string, kind: Kind, doc: unknown) {
    await this.owned(userId, id);
    const errors = await this.check(userId, kind, doc);
    return { valid: errors.length === 0, errors };
  }

  /** Publishes a version (default the latest; with a document, it is saved first). Invalid: 422. */
  async publish(userId: string, id: string, kind: Kind, body: { doc?: Record<string, unknown>; version?: number; message?: string | null }) {
    await this.owned(userId, id);
    if (body.doc && body.version) throw Errors.invalid(['body', 'version'], `give either ${kind} (saved, then published) or version, not both`);
    let version = body.version ?? (await this.latest(id, kind));
    let row = await this.row(id, kind, version);
    if (!row) throw Errors.invalid(['body', 'version'], `no ${kind} version ${version}`);
    if (body.doc) {
      const doc = { ...EMPTY[kind], ...body.doc };
      const errors = await this.check(userId, kind, doc);
      if (errors.length) throw new AppError(422, 'INVALID_DOCUMENT', errors);
      row = await this.insertNext(id, kind, version, doc, body.message ?? 'published');
      if (!row) throw new AppError(409, 'VERSION_CONFLICT', `the ${kind} changed while publishing; reload and publish again`);
      version = row.version;
    }
    const errors = await this.check(userId, kind, row.document);
    if (errors.length) throw new AppError(422, 'INVALID_DOCUMENT', errors);
    const [done] = await this.db.sql<VersionRow>(
      `update prod_solution_versions set published = true, published_at = now(), message = coalesce(?, message)
       where solution_id = ? and kind = ? and version = ? returning *`,
      [body.doc ? null : body.message || null, id, kind, version],
    );
    await this.touch(id);
    return this.view(id, kind, done);
  }

  async versions(userId: string, id: string, kind: Kind) {
    await this.owned(userId, id);
    const rows = await this.db.sql<VersionRow & { nodes: number }>(
      `select version, message, published, published_at, created_at, coalesce(jsonb_array_length(case when jsonb_typeof(document -> 'nodes') = 'array' then document -> 'nodes' end), 0) as nodes
       from prod_solution_versions where solution_id = ? and kind = ? order by version desc`,
      [id, kind],
    );
    return { items: rows.map((r) => ({ version: r.version, message: r.message, published: r.published, published_at: iso(r.published_at), created_at: iso(r.created_at)!, nodes: r.nodes })) };
  }

  async version(userId: string, id: string, kind: Kind, version: number) {
    await this.owned(userId, id);
    const r = await this.row(id, kind, version);
    if (!r) throw Errors.notFound(`${kind} version`);
    return this.view(id, kind, r);
  }

  /** A published version stays (409); so does the latest, the document being edited (409). */
  async deleteVersion(userId: string, id: string, kind: Kind, version: number): Promise<void> {
    await this.owned(userId, id);
    const r = await this.row(id, kind, version);
    if (!r) throw Errors.notFound(`${kind} version`);
    if (r.published) throw new AppError(409, 'VERSION_PUBLISHED', `${kind} version ${version} is published and cannot be deleted`);
    const rows = await this.db.sql(
      `delete from prod_solution_versions where solution_id = ? and kind = ? and version = ? and not published
         and version < (select max(version) from prod_solution_versions where solution_id = ? and kind = ?) returning version`,
      [id, kind, version, id, kind],
    );
    if (!rows.length) throw new AppError(409, 'CURRENT_VERSION', `${kind} version ${version} is the current one; save or roll back to another version first`);
  }

  /** A new version (latest+1) whose document equals from_version's. */
  async rollback(userId: string, id: string, kind: Kind, from: number, message?: string | null) {
    await this.owned(userId, id);
    const src = await this.row(id, kind, from);
    if (!src) throw Errors.invalid(['body', 'from_version'], `no ${kind} version ${from}`);
    for (let attempt = 0; attempt < 5; attempt++) {
      const r = await this.insertNext(id, kind, await this.latest(id, kind), src.document, message ?? `rollback to version ${from}`);
      if (r) return this.view(id, kind, r);
    }
    throw new AppError(409, 'VERSION_CONFLICT', `the ${kind} keeps changing; retry the rollback`);
  }
}
