/**
 * The store of the whole database as a backup sees it: which tables there are (in foreign-key
 * order), their rows as COPY text, and the sequences. Written by hand because the embedded
 * PostgreSQL package ships no pg_dump and Debian's older pg_dump refuses a newer server; COPY in
 * text format and the migrations are what every server version we run on understands. The schema
 * itself is never dumped: a restore runs this code's migrations, then loads the rows.
 */
import { once } from 'node:events';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';

/** Per-node liveness and the migrator's own bookkeeping: not data of the install. */
const SKIPPED = new Set(['mikro_orm_migrations', 'service_instances']);
export const MIGRATIONS_TABLE = 'mikro_orm_migrations';

export interface TableInfo {
  name: string;
  /** Columns copied (generated ones left out: the server computes them again). */
  columns: string[];
}

export interface SequenceValue {
  name: string;
  value: number;
  called: boolean;
}

const ident = (c: pg.Client, name: string) => c.escapeIdentifier(name);

export async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

/** One snapshot for every read that follows, until commit (the whole backup sees one instant). */
export async function beginSnapshot(c: pg.Client): Promise<void> {
  await c.query('begin isolation level repeatable read read only');
}

/** Tables of the current schema, parents before children (a table's references point to earlier ones). */
export async function listTables(c: pg.Client): Promise<TableInfo[]> {
  const cols = await c.query<{ table_name: string; column_name: string }>(
    `select c.relname as table_name, a.attname as column_name
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid
      where n.nspname = current_schema() and c.relkind in ('r', 'p') and a.attnum > 0
        and not a.attisdropped and a.attgenerated = ''
      order by c.relname, a.attnum`,
  );
  const refs = await c.query<{ child: string; parent: string }>(
    `select cl.relname as child, pl.relname as parent
       from pg_constraint k join pg_class cl on cl.oid = k.conrelid join pg_class pl on pl.oid = k.confrelid
       join pg_namespace n on n.oid = cl.relnamespace
      where k.contype = 'f' and n.nspname = current_schema() and k.conrelid <> k.confrelid`,
  );
  const columns = new Map<string, string[]>();
  for (const r of cols.rows) if (!SKIPPED.has(r.table_name)) columns.set(r.table_name, [...(columns.get(r.table_name) ?? []), r.column_name]);
  const parents = new Map<string, Set<string>>();
  for (const r of refs.rows) if (columns.has(r.child) && columns.has(r.parent)) parents.set(r.child, (parents.get(r.child) ?? new Set()).add(r.parent));
  const ordered: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (t: string, path: string[]) => {
    if (state.get(t) === 'done') return;
    // A cycle between tables cannot be loaded table by table without superuser rights.
    if (state.get(t) === 'visiting') throw new Error(`foreign keys form a cycle: ${[...path, t].join(' -> ')}`);
    state.set(t, 'visiting');
    for (const p of [...(parents.get(t) ?? [])].sort()) visit(p, [...path, t]);
    state.set(t, 'done');
    ordered.push(t);
  };
  for (const t of [...columns.keys()].sort()) visit(t, []);
  return ordered.map((name) => ({ name, columns: columns.get(name)! }));
}

/** Names of the migrations applied, in order (the archive's schema version). */
export async function appliedMigrations(c: pg.Client): Promise<string[]> {
  const exists = await c.query('select to_regclass($1) as t', [MIGRATIONS_TABLE]);
  if (!exists.rows[0].t) return [];
  return (await c.query<{ name: string }>(`select name from ${MIGRATIONS_TABLE} order by id`)).rows.map((r) => r.name);
}

export async function readSequences(c: pg.Client): Promise<SequenceValue[]> {
  const r = await c.query<{ name: string; value: string | null; called: boolean }>(
    `select sequencename as name, coalesce(last_value, start_value)::text as value, last_value is not null as called
       from pg_sequences where schemaname = current_schema() order by sequencename`,
  );
  return r.rows.map((s) => ({ name: s.name, value: Number(s.value), called: s.called }));
}

/** A table's rows as a stream of COPY text (one line per row). */
export function copyOut(c: pg.Client, t: TableInfo): NodeJS.ReadableStream {
  return c.query(copyTo(`copy ${ident(c, t.name)} (${t.columns.map((x) => ident(c, x)).join(', ')}) to stdout`));
}

export interface CopyIn {
  write(chunk: Uint8Array): Promise<void>;
  /** Ends the COPY; resolves to the rows loaded (rejects with the server's error). */
  end(): Promise<number>;
  /** Fails the COPY (the server is told, so the connection takes queries again). */
  abort(why: string): void;
}

/** Load COPY text into a table, fed piece by piece (pieces may cut rows anywhere). */
export function copyIn(c: pg.Client, t: TableInfo): CopyIn {
  const stream = c.query(copyFrom(`copy ${ident(c, t.name)} (${t.columns.map((x) => ident(c, x)).join(', ')}) from stdin`));
  // An error of the server ends the stream early: it is surfaced rather than waited on.
  const failed = once(stream, 'error').then(([e]) => {
    throw e;
  });
  failed.catch(() => {});
  return {
    write: async (chunk) => {
      if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), failed]);
    },
    end: async () => {
      const done = once(stream, 'finish');
      stream.end();
      await Promise.race([done, failed]);
      return stream.rowCount;
    },
    abort: (why) => {
      if (!stream.destroyed) stream.destroy(new Error(why));
    },
  };
}

export async function setSequences(c: pg.Client, seqs: SequenceValue[]): Promise<void> {
  for (const s of seqs) {
    const exists = await c.query('select to_regclass($1) as t', [s.name]);
    if (exists.rows[0].t) await c.query('select setval($1::regclass, $2, $3)', [ident(c, s.name), s.value, s.called]);
  }
}

/** Whether the database holds an install: a `users` table with rows. */
export async function holdsData(c: pg.Client): Promise<boolean> {
  const exists = await c.query("select to_regclass('users') as t");
  if (!exists.rows[0].t) return false;
  return (await c.query('select exists (select 1 from users) as any')).rows[0].any as boolean;
}

/** Empty the given tables (restore --force into a database that holds an install). */
export async function truncate(c: pg.Client, tables: TableInfo[]): Promise<void> {
  if (tables.length) await c.query(`truncate ${tables.map((t) => ident(c, t.name)).join(', ')} cascade`);
}
