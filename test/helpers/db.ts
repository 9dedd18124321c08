import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/platform/config/index.js';
import { migrate, openDatabase, type Database } from '../../src/platform/db/index.js';
import { ensureDatabase, startEmbeddedPostgres } from '../../src/platform/db/embedded.js';

type T = { teardown(fn: () => unknown): void };

let fileServer: Promise<string> | null = null;

/**
 * URL of the run's PostgreSQL server (admin db). `npm test` starts one embedded server per run and
 * passes TEST_PG_URL; a file run alone (`npx tap test/x.test.ts`) starts its own.
 */
async function serverUrl(t: T): Promise<string> {
  if (process.env.TEST_PG_URL) return process.env.TEST_PG_URL;
  fileServer ??= (async () => {
    const home = mkdtempSync(join(tmpdir(), 'agentsvc-pg-'));
    const server = await startEmbeddedPostgres(home, { database: 'postgres' });
    process.once('beforeExit', () => void server.stop().then(() => rmSync(home, { recursive: true, force: true })));
    t.teardown(() => undefined);
    return server.url;
  })();
  return fileServer;
}

/** A fresh, migrated database for one test file (or test), dropped at teardown. */
export async function freshDatabaseUrl(t: T): Promise<string> {
  const admin = await serverUrl(t);
  const name = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await ensureDatabase(admin, name);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  t.teardown(async () => {
    // Bounded: a database server that stopped answering fails the teardown, it does not hang it.
    const c = new pg.Client({ connectionString: admin, connectionTimeoutMillis: 10_000, query_timeout: 60_000 });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`).catch(() => {});
    await c.end();
  });
  return url.toString();
}

export async function testDatabase(t: T): Promise<Database> {
  const url = await freshDatabaseUrl(t);
  const db = await openDatabase(loadConfig({ env: { DATABASE_URL: url, AGENTSVC_HOME: tmpdir() } }));
  await migrate(db);
  t.teardown(() => db.close());
  return db;
}
