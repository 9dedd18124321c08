import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * What the embedded PostgreSQL runs as, may reach and sees of our environment. As root it runs
 * as the `postgres` system user (postgres refuses uid 0); that user needs to traverse to its data
 * directory and to the binaries, without the folders on the way being opened to everyone.
 */

export interface RunAs {
  uid?: number;
  gid?: number;
}

/** uid/gid to run as: postgres refuses to run as root, so root drops to a `postgres` system user. */
export function runAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/**
 * The environment of initdb and postgres: nothing of ours (model keys, DATABASE_URL passwords,
 * tokens) reaches the database processes or anything they spawn; only what they need to run.
 */
export function serverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin', LC_ALL: 'C', LC_MESSAGES: 'C' };
  if (process.env.TZ) env.TZ = process.env.TZ;
  return env;
}

/** `dir` and its parents, from the root down. */
function ancestors(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    out.unshift(d);
    if (d === dirname(d)) return out;
  }
}

/**
 * The topmost folder on the way to any of `dirs` that `ids` may not traverse (below it everything
 * looks closed too, so only it matters), asked of the kernel itself; null when all are open.
 */
export function firstClosed(ids: RunAs, dirs: string[]): string | null {
  const all = [...new Set(dirs.flatMap(ancestors))];
  const r = spawnSync('/bin/sh', ['-c', 'for d; do [ -x "$d" ] || { printf "%s" "$d"; break; }; done', 'sh', ...all], {
    ...ids,
    env: serverEnv(),
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`cannot check folder access as uid ${ids.uid}: ${r.error?.message ?? r.stderr}`);
  return r.stdout || null;
}

/**
 * Lets only the postgres user traverse the folders that block it, where the old way gave every
 * local user o+x on every parent of AGENTSVC_HOME. First choice: an ACL entry `u:postgres:x`
 * (setfacl, package acl). Without ACLs, a folder whose group has no access at all (like /root,
 * 0700) gets group postgres with --x: for its old group nothing changes, and the one member of
 * that group is the postgres user. Anything else stops with the folder and the ways out.
 */
export function grantTraverse(ids: RunAs, dirs: string[]): { dir: string; how: 'acl' | 'group' }[] {
  if (ids.uid === undefined) return [];
  const done: { dir: string; how: 'acl' | 'group' }[] = [];
  for (let d = firstClosed(ids, dirs); d; d = firstClosed(ids, dirs)) {
    if (done.some((x) => x.dir === d)) throw new Error(`the postgres system user (uid ${ids.uid}) still cannot traverse ${d}`);
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
      `the postgres system user (uid ${ids.uid}) cannot traverse ${d}, ${why}, and its group has access already; ` +
        `grant it with \`setfacl -m u:postgres:x ${d}\`, or use an AGENTSVC_HOME it can reach, or DATABASE_URL`,
    );
  }
  return done;
}
