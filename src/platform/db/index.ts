import { join } from 'node:path';
import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { EntityManager, Knex } from '@mikro-orm/postgresql';
import { ConfigError, type Config } from '../config/index.js';
import { EmbeddedStartError, startEmbeddedPostgres, type EmbeddedDb } from './embedded.js';
import { migrationsList } from './migrations/index.js';
import { entities } from './schema.js';
import { PositionalTexts, StatementNames } from './prepared.js';

/** A connection of knex's pool: node-postgres's client. */
interface PgConnection {
  query(q: { text: string; values: unknown[]; name?: string }): Promise<{ rows: unknown[] }>;
}

export type { EntityManager };

/** Raw SQL with `?` placeholders bound by the server, answering the rows. */
export type Sql = <T = Record<string, unknown>>(query: string, params?: unknown[]) => Promise<T[]>;

export interface Database {
  orm: MikroORM;
  /** A fresh fork of the entity manager: one per request or unit of work. */
  em(): EntityManager;
  /**
   * Raw SQL outside any unit of work: `?` placeholders bound by the server (no client-side
   * quoting of values), no entity manager forked. The hot paths' queries (every chat:send runs a
   * dozen) cost a third of what they cost through `em().getConnection().execute`. A text that
   * runs often becomes a named prepared statement (./prepared.ts).
   */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /**
   * `fn` in one transaction: its `sql` runs inside it; committed when `fn` resolves, rolled back
   * when it throws (the error goes on).
   */
  transaction<R>(fn: (sql: Sql) => Promise<R>): Promise<R>;
  /**
   * The query builder (knex, under MikroORM) for statements whose shape depends on the input
   * (optional filters): values are always bound, never spliced into the text.
   */
  knex: Knex;
  url: string;
  /** Set when this process started the embedded server. */
  embedded?: EmbeddedDb;
  close(): Promise<void>;
}

export function ormOptions(url: string, poolMax = 20): Options {
  return {
    clientUrl: url,
    entities,
    extensions: [Migrator],
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    pool: { min: 0, max: poolMax },
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: false,
    debug: false,
    ensureDatabase: false,
  };
}

/**
 * Connect to DATABASE_URL, or start (or join, or adopt) the embedded server in AGENTSVC_HOME.
 * An unreachable DATABASE_URL is a ConfigError naming the setting; an embedded server that does
 * not start is an EmbeddedStartError with its cause and log. Either way `up` prints one line and
 * exits 1. `role` tells the embedded server's owner file whether this is an `up` or a CLI command.
 */
export async function openDatabase(
  config: Config,
  opts: {
    migrate?: boolean;
    poolMax?: number;
    role?: 'up' | 'cli';
    progress?: (step: string) => void;
    /** The embedded server as the caller began to start it (`up` does so before this module, and MikroORM, load). */
    embedded?: Promise<EmbeddedDb>;
  } = {},
): Promise<Database> {
  let embedded: EmbeddedDb | undefined;
  let url = config.databaseUrl;
  if (!url) {
    embedded = await (opts.embedded ?? startEmbeddedPostgres(config.home, { role: opts.role, progress: opts.progress }));
    url = embedded.url;
  } else opts.progress?.(`connecting to DATABASE_URL (${where(url)})`);
  let orm: MikroORM;
  try {
    orm = await MikroORM.init(ormOptions(url, opts.poolMax));
    await orm.em.getConnection().execute('select 1');
  } catch (e) {
    await embedded?.stop();
    if (!config.databaseUrl) throw new EmbeddedStartError(`cannot connect to it: ${(e as Error).message}`, join(config.home, 'logs', 'postgres.log'));
    throw new ConfigError('DATABASE_URL', `cannot connect to the database: ${(e as Error).message}`);
  }
  const knex = (orm.em as EntityManager).getConnection().getKnex();
  const names = new StatementNames();
  const texts = new PositionalTexts();
  const pool = knex.client as { acquireConnection(): Promise<PgConnection>; releaseConnection(c: PgConnection): Promise<void> };
  const run = async <T>(query: string, values: never[], name?: string) => {
    // Straight to a pooled connection of knex's pool: knex.raw built a query object, bound and
    // rewrote the text and emitted events at every run, about half of what a hot statement cost
    // this process (bench/streaming.ts, a profile of paced K=200). Texts in knex's other forms
    // (`??` identifiers, `\?`) and a wrong number of values (knex's error) still go through knex.
    const text = values.length ? texts.positional(query, values.length) : query;
    if (text === null) {
      const raw = knex.raw(query, values);
      return (await (name ? raw.options({ name }) : raw)).rows as T[];
    }
    const conn = await pool.acquireConnection();
    try {
      return (await conn.query(name ? { text, values, name } : { text, values })).rows as T[];
    } finally {
      await pool.releaseConnection(conn);
    }
  };
  const db: Database = {
    orm,
    em: () => orm.em.fork() as EntityManager,
    sql: async <T>(query: string, params: unknown[] = []) => {
      const values = params.map((p) => (p === undefined ? null : p)) as never[];
      // A text without parameters may hold several statements (the simple protocol), which a
      // prepared statement cannot: those stay unnamed.
      const name = values.length ? names.name(query) : undefined;
      try {
        return await run<T>(query, values, name);
      } catch (e) {
        if (name && names.refused(query, e)) return run<T>(query, values);
        throw e;
      }
    },
    transaction: (fn) =>
      (orm.em.fork() as EntityManager).transactional((em) => {
        const ctx = em.getTransactionContext();
        return fn((query, params = []) => em.getConnection().execute(query, params as unknown[], 'all', ctx));
      }),
    knex,
    url,
    embedded: embedded?.owned ? embedded : undefined,
    close: async () => {
      await orm.close(true);
      await embedded?.stop();
    },
  };
  if (opts.migrate) {
    if (opts.progress) {
      const pending = await pendingMigrations(db);
      opts.progress(pending.length ? `applying ${pending.length} database migration${pending.length === 1 ? '' : 's'}` : 'database schema up to date');
    }
    await migrate(db);
  }
  return db;
}

/** A database URL without its credentials: host, port and database name. */
function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname}`;
  } catch {
    return 'unparsable URL';
  }
}

export async function migrate(db: Database): Promise<string[]> {
  const migrator = db.orm.getMigrator();
  const done = await migrator.up();
  return done.map((m) => m.name);
}

export async function pendingMigrations(db: Database): Promise<string[]> {
  return (await db.orm.getMigrator().getPendingMigrations()).map((m) => m.name);
}
