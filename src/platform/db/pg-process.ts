import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

/**
 * What is left of an embedded PostgreSQL in a data directory, and who owns it. `kill -0` alone
 * cannot tell: after a SIGKILL the pid in postmaster.pid can be a zombie nobody reaps, or a pid
 * the kernel gave to another process, and the dead server's children may still hold its shared
 * memory for a while. So a server is live when its pid is a postgres process *and* its port
 * accepts; and a server counts as owned when the owner file names a process that still runs
 * (same pid and same start time, so a reused pid is not mistaken for the owner).
 */

export interface LockFile {
  pid: number;
  port: number;
  /** SysV shared memory id of the server (line 7), -1 when unknown. */
  shmId: number;
  /** `starting`, `ready`, `stopping` (line 8), '' when absent. */
  status: string;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function readLockFile(dataDir: string): LockFile | null {
  const file = join(dataDir, 'postmaster.pid');
  if (!existsSync(file)) return null;
  const lines = readFileSync(file, 'utf8').split('\n');
  const shm = (lines[6] ?? '').trim().split(/\s+/);
  return { pid: Number(lines[0]) || 0, port: Number(lines[3]) || 0, shmId: shm.length === 2 ? Number(shm[1]) : -1, status: (lines[7] ?? '').trim() };
}

/** `/proc/<pid>/stat`: state and start time (clock ticks since boot); null when there is no such process. */
function procStat(pid: number): { comm: string; state: string; start: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = s.lastIndexOf(')');
    const rest = s.slice(close + 2).split(' ');
    return { comm: s.slice(s.indexOf('(') + 1, close), state: rest[0], start: Number(rest[19]) };
  } catch {
    return null;
  }
}

const hasProc = existsSync('/proc/self/stat');

function signalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A running (not zombie) process; with `comm`, only if it runs that program. */
export function running(pid: number, comm?: string): boolean {
  if (pid <= 0) return false;
  if (!hasProc) return signalable(pid);
  const st = procStat(pid);
  return !!st && st.state !== 'Z' && st.state !== 'X' && (!comm || st.comm === comm);
}

export function portAccepts(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** Processes attached to a SysV shared memory segment (0 when it is gone, or unknowable off Linux). */
export function shmAttached(shmId: number): number {
  if (shmId < 0 || !hasProc) return 0;
  let table: string;
  try {
    table = readFileSync('/proc/sysvipc/shm', 'utf8');
  } catch {
    return 0;
  }
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (Number(f[1]) === shmId) return Number(f[6]) || 0;
  }
  return 0;
}

/** Waits until `cond` holds, polling; false after `ms`. */
export async function until(cond: () => boolean | Promise<boolean>, ms: number, every = 50): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() >= end) return false;
    await sleep(every);
  }
}

/** The process that owns (and will stop) the embedded server; `role` says whether it is an `up`. */
export interface Owner {
  pid: number;
  start: number;
  role: 'up' | 'cli';
}

export const ownerFile = (base: string) => join(base, 'owner.json');

export function self(role: Owner['role']): Owner {
  return { pid: process.pid, start: procStat(process.pid)?.start ?? 0, role };
}

// As root, AGENTSVC_HOME/db belongs to the postgres user: the owner file is read without following
// a symlink and replaced by rename of a file created exclusively, so that user cannot point root's
// write at another file.
export function readOwner(base: string): Owner | null {
  try {
    const fd = openSync(ownerFile(base), constants.O_RDONLY | constants.O_NOFOLLOW);
    let text: string;
    try {
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
    const o = JSON.parse(text) as Owner;
    return typeof o.pid === 'number' ? o : null;
  } catch {
    return null;
  }
}

export function writeOwner(base: string, o: Owner) {
  const tmp = `${ownerFile(base)}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(tmp, JSON.stringify(o) + '\n', { mode: 0o600, flag: 'wx' });
  renameSync(tmp, ownerFile(base));
}

/** The owner still runs: the same process (pid and start time), not a later one with its pid. */
export function ownerAlive(o: Owner | null): boolean {
  if (!o || !running(o.pid)) return false;
  return !hasProc || procStat(o.pid)?.start === o.start;
}

export function isOwner(base: string, o: Owner): boolean {
  const cur = readOwner(base);
  return !!cur && cur.pid === o.pid && cur.start === o.start;
}

export function releaseOwner(base: string, o: Owner) {
  if (isOwner(base, o)) rmSync(ownerFile(base), { force: true });
}
