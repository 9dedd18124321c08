import { execFileSync, spawnSync } from 'node:child_process';
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

function ancestors(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    out.push(d);
    if (d === dirname(d)) return out;
  }
}

/** The folders among `dirs` (and their parents) that `ids` may not traverse, asked of the kernel itself. */
export function closedTo(ids: RunAs, dirs: string[]): string[] {
  const all = [...new Set(dirs.flatMap(ancestors))];
  const r = spawnSync('/bin/sh', ['-c', 'for d; do [ -x "$d" ] || printf "%s\\n" "$d"; done', 'sh', ...all], {
    ...ids,
    env: serverEnv(),
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`cannot check folder access as uid ${ids.uid}: ${r.error?.message ?? r.stderr}`);
  return r.stdout.split('\n').filter(Boolean);
}

/**
 * Lets only the postgres user traverse the folders that block it (an ACL entry `u:postgres:x`),
 * where the old way gave every local user o+x on every parent of AGENTSVC_HOME. Without `setfacl`
 * (package acl) or ACL support, it stops with the folders and the ways out instead of opening them.
 */
export function grantTraverse(ids: RunAs, dirs: string[]): string[] {
  if (ids.uid === undefined) return [];
  const closed = closedTo(ids, dirs);
  for (const d of closed) {
    const r = spawnSync('setfacl', ['-m', `u:${ids.uid}:x`, d], { encoding: 'utf8' });
    if (r.status !== 0) {
      const why = r.error ? 'setfacl is not installed (package acl)' : `setfacl failed: ${r.stderr.trim()}`;
      throw new Error(
        `the postgres system user (uid ${ids.uid}) cannot traverse ${d} and ${why}; ` +
          `grant it with \`setfacl -m u:postgres:x ${d}\`, or use an AGENTSVC_HOME it can reach, or DATABASE_URL`,
      );
    }
  }
  const still = closedTo(ids, dirs);
  if (still.length) throw new Error(`the postgres system user (uid ${ids.uid}) still cannot traverse ${still.join(', ')}`);
  return closed;
}
