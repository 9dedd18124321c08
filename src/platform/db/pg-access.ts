import { grantTraverse as grantUserTraverse, type RunAs, systemUser } from '../lib/system-user.js';

export type { RunAs };

/**
 * What the embedded PostgreSQL runs as, may reach and sees of our environment. As root it runs
 * as the `postgres` system user (postgres refuses uid 0); that user needs to traverse to its data
 * directory and to the binaries, without the folders on the way being opened to everyone.
 */

/** uid/gid to run as: postgres refuses to run as root, so root drops to a `postgres` system user. */
export function runAs(): RunAs {
  return process.getuid?.() === 0 ? systemUser('postgres') : {};
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

/** Lets only the postgres user traverse the folders that block it (see system-user.ts). */
export function grantTraverse(ids: RunAs, dirs: string[]): { dir: string; how: 'acl' | 'group' }[] {
  return grantUserTraverse('postgres', ids, dirs);
}
