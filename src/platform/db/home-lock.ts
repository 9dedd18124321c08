import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { running } from './pg-process.js';

/**
 * The lock `agentsvc up` holds on its home (docs/operations.md, "The home lock"): an exclusive
 * kernel lock on AGENTSVC_HOME/run/up.lock, taken before the database starts and let go after it
 * has stopped. The kernel drops it when the process ends however it ends (SIGKILL, OOM killer),
 * so a lock left by a dead `up` never blocks the next one, and a live one can never be mistaken
 * for stale (a pid file would need a liveness guess). Node has no file lock of its own:
 * `fs-native-extensions` (prebuilt, no install step) takes an open-file-description lock
 * (F_OFD_SETLK on Linux, flock on macOS), which conflicts even between two opens in one process.
 * The file holds what a refused `up` prints: the holder's pid, its state and URL.
 */

const require = createRequire(import.meta.url);

interface Native {
  tryLock(fd: number): boolean;
}

export interface LockHolder {
  pid: number;
  state: 'starting' | 'serving' | 'stopping';
  url?: string;
}

export const lockFile = (home: string) => join(home, 'run', 'up.lock');

/** Another `up` holds the home: one line naming it. */
export class HomeLocked extends Error {
  constructor(
    readonly home: string,
    readonly holder: LockHolder | null,
  ) {
    const who = holder ? `agentsvc up (pid ${holder.pid}${holder.state === 'serving' && holder.url ? `, serving ${holder.url}` : `, ${holder.state}`})` : 'another agentsvc up';
    super(`${home} is locked by ${who}; stop that \`agentsvc up\` first, or pass another --home`);
  }
}

export interface HomeLock {
  /** Rewrite what the file says about this holder (state, URL). */
  update(holder: Partial<LockHolder>): void;
  /** Let go (also done by the kernel when the process ends). */
  release(): void;
}

function parse(text: string): LockHolder | null {
  try {
    const o = JSON.parse(text) as LockHolder;
    return Number.isInteger(o.pid) && o.pid > 0 ? o : null;
  } catch {
    return null;
  }
}

/** What the lock file says, when it says something readable. */
export function readLockHolder(home: string): LockHolder | null {
  try {
    return parse(readFileSync(lockFile(home), 'utf8'));
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Takes the lock or throws HomeLocked. The holder writes its pid just after locking: a refused
 * caller that reads in between finds the file empty or naming the last holder, so it reads again
 * for up to `settleMs` until the pid is another live process.
 */
export async function lockHome(home: string, settleMs = 1000): Promise<HomeLock> {
  const native = require('fs-native-extensions') as Native;
  mkdirSync(join(home, 'run'), { recursive: true, mode: 0o700 });
  // 'a+' neither truncates nor replaces: the file of a live holder stays as it wrote it.
  const fd = openSync(lockFile(home), 'a+', 0o600);
  let locked = false;
  try {
    locked = native.tryLock(fd);
  } finally {
    if (!locked) closeSync(fd);
  }
  if (!locked) {
    let holder = readLockHolder(home);
    const end = Date.now() + settleMs;
    while ((!holder || holder.pid === process.pid || !running(holder.pid)) && Date.now() < end) {
      await sleep(50);
      holder = readLockHolder(home);
    }
    throw new HomeLocked(home, holder);
  }
  let current: LockHolder = { pid: process.pid, state: 'starting' };
  let open = true;
  const write = () => {
    if (!open) return;
    ftruncateSync(fd, 0);
    writeSync(fd, `${JSON.stringify(current)}\n`, 0);
  };
  write();
  return {
    update(h) {
      current = { ...current, ...h };
      write();
    },
    release() {
      if (!open) return;
      open = false;
      // The file stays (removing it would let a third `up` lock a new file while a second one
      // still waits on the old); it is empty so nobody reads a holder that is gone.
      ftruncateSync(fd, 0);
      closeSync(fd);
    },
  };
}
