/**
 * System users a root service drops to, and the folder access they need. A root install runs the
 * embedded PostgreSQL as `postgres` (it refuses uid 0) and sandboxed commands as `agentsvc-sandbox`
 * (docs/trust-boundary.md: never host root); each must traverse to its own folders, without the folders on
 * the way being opened to every local user.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

export interface RunAs {
  uid?: number;
  gid?: number;
}

/** A system user's uid/gid, created (no home, no login shell, its own group) when missing. */
export function systemUser(name: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** `dir` and its parents, from the root down. */
function ancestors(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    out.unshift(d);
    if (d === dirname(d)) return out;
  }
}

const PLAIN_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' };

/**
 * The topmost folder on the way to any of `dirs` that `ids` may not traverse (below it everything
 * looks closed too, so only it matters), asked of the kernel itself; null when all are open.
 */
export function firstClosed(ids: RunAs, dirs: string[]): string | null {
  const all = [...new Set(dirs.flatMap(ancestors))];
  const r = spawnSync('/bin/sh', ['-c', 'for d; do [ -x "$d" ] || { printf "%s" "$d"; break; }; done', 'sh', ...all], {
    ...ids,
    env: PLAIN_ENV,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`cannot check folder access as uid ${ids.uid}: ${r.error?.message ?? r.stderr}`);
  return r.stdout || null;
}

/**
 * Lets only user `name` traverse the folders that block it. First choice: an ACL entry
 * `u:<name>:x` (setfacl, package acl). Without ACLs, a folder whose group has no access at all
 * (like /root, 0700) gets the user's own group with --x: for its old group nothing changes, and the
 * one member of that group is that user. Anything else stops with the folder and the ways out.
 */
export function grantTraverse(name: string, ids: RunAs, dirs: string[]): { dir: string; how: 'acl' | 'group' }[] {
  if (ids.uid === undefined) return [];
  const done: { dir: string; how: 'acl' | 'group' }[] = [];
  for (let d = firstClosed(ids, dirs); d; d = firstClosed(ids, dirs)) {
    if (done.some((x) => x.dir === d)) throw new Error(`the ${name} system user (uid ${ids.uid}) still cannot traverse ${d}`);
    const acl = spawnSync('setfacl', ['-m', `u:${ids.uid}:x`, d], { encoding: 'utf8' });
    if (acl.status === 0) {
      done.push({ dir: d, how: 'acl' });
      continue;
    }
    const st = statSync(d);
    if ((st.mode & 0o070) === 0 && st.uid === process.getuid?.()) {
      chownSync(d, st.uid, ids.gid!);
      chmodSync(d, (st.mode & 0o7707) | 0o010);
      done.push({ dir: d, how: 'group' });
      continue;
    }
    const why = acl.error ? 'setfacl is not installed (package acl)' : `setfacl failed: ${acl.stderr.trim()}`;
    throw new Error(
      `the ${name} system user (uid ${ids.uid}) cannot traverse ${d}, ${why}, and its group has access already; ` +
        `grant it with \`setfacl -m u:${name}:x ${d}\` (apt-get install acl), or use folders it can reach`,
    );
  }
  return done;
}
