import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import type { Config } from './config/index.js';
import { openDatabase, type Database } from './db/index.js';
import { buildApp } from './server/app.js';
import { createGateway, disconnectKey, type AppServer } from './server/gateway.js';
import { bootstrapAdmin } from './users/bootstrap.js';
import { KEY_REVOKED_CHANNEL, UserService } from './users/service.js';

export interface Service {
  app: FastifyInstance;
  io: AppServer;
  db: Database;
  users: UserService;
  url: string;
  adminKeyCreated: boolean;
  warnings: string[];
  close(): Promise<void>;
}

export interface StartOptions {
  /** Log to this file (default AGENTSVC_HOME/logs/agentsvc.log); false for none. */
  logFile?: string | false;
  /** An already open database (tests share one per file). */
  db?: Database;
}

/** Listen for key deletions made by any process (CLI, another node) and drop their sockets. */
async function listenRevocations(url: string, onRevoked: (keyId: string) => void): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  client.on('notification', (n) => n.channel === KEY_REVOKED_CHANNEL && n.payload && onRevoked(n.payload));
  client.on('error', () => {});
  await client.query(`listen ${KEY_REVOKED_CHANNEL}`);
  return client;
}

/** The composition root: builds every adapter once and passes it down. */
export async function startService(config: Config, opts: StartOptions = {}): Promise<Service> {
  mkdirSync(join(config.home, 'logs'), { recursive: true, mode: 0o700 });
  const warnings: string[] = [];
  const db = opts.db ?? (await openDatabase(config, { migrate: true }));
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const users = new UserService(db.em);
    const admin = await bootstrapAdmin(config.home, users);
    const logFile = opts.logFile ?? join(config.home, 'logs', 'agentsvc.log');
    const app = await buildApp({
      config,
      users,
      health: async () => {
        try {
          await db.orm.em.getConnection().execute('select 1');
          return true;
        } catch {
          return false;
        }
      },
      logger: logFile ? { level: config.logLevel, file: logFile } : false,
    });
    closers.push(() => app.close());
    await app.listen({ host: config.host, port: config.port });
    const io = createGateway(app.server, { config, users });
    closers.unshift(() => io.close());
    const listener = await listenRevocations(db.url, (keyId) => disconnectKey(io, keyId));
    closers.push(() => listener.end());
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;

    let closing: Promise<void> | null = null;
    return {
      app,
      io,
      db,
      users,
      url: `http://${host}:${port}`,
      adminKeyCreated: admin.created,
      warnings,
      close: () =>
        (closing ??= (async () => {
          for (const c of closers) await c().catch(() => {});
          if (!opts.db) await db.close();
        })()),
    };
  } catch (e) {
    for (const c of closers) await c().catch(() => {});
    if (!opts.db) await db.close();
    throw e;
  }
}
