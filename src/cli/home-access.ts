/**
 * `agentsvc up` as root with the local runner: sandboxed commands run as the `agentsvc-sandbox`
 * system user, which must traverse every folder on the way to the workspaces (AGENTSVC_HOME under
 * /root or a 0700 home folder is closed to it). Before the service starts, each folder on the way
 * that it cannot traverse gets an ACL entry for that user only (`setfacl --modify u:<uid>:x`), so
 * no folder is opened to every local user. Without setfacl (or on a file system without ACLs) the
 * exact commands to run are given instead; the service re-checks a refused sandbox on the next
 * command (src/core/tools/runner-recheck.ts), so running them needs no restart.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SANDBOX_USER } from '../../runners/local/sandbox.js';
import { firstClosed, systemUser } from '../platform/lib/system-user.js';

export interface HomeAccess {
  /** Folders that got the ACL entry now. */
  granted: string[];
  /** Folders still closed to the sandbox user, and the command that opens them to it alone. */
  closed: string[];
  fix: string | null;
}

/** `dir` and its parents, from the root down. */
function ancestors(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    out.unshift(d);
    if (d === dirname(d)) return out;
  }
}

/** The deepest existing folder of `path` (the workspaces folder is made by the runner later). */
function existing(path: string): string {
  let d = resolve(path);
  while (!existsSync(d) && d !== dirname(d)) d = dirname(d);
  return d;
}

/**
 * Folders on the way that the modes close to `ids` (not its own, not its group's, no `o+x`). Only
 * for the message: what the kernel says (firstClosed) decides; ACL entries are not read here.
 */
function closedByMode(dir: string, ids: { uid: number; gid: number }): string[] {
  return ancestors(dir).filter((d) => {
    const st = statSync(d);
    const bit = st.uid === ids.uid ? 0o100 : st.gid === ids.gid ? 0o010 : 0o001;
    return (st.mode & bit) === 0;
  });
}

const quote = (s: string) => (/^[A-Za-z0-9_./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * Make the workspaces folder reachable for the sandbox user (root only; nothing to do otherwise:
 * the sandbox then runs as the service's own uid). `setfacl` is the command used (a test passes
 * another).
 */
export function ensureHomeAccess(workspaces: string, setfacl = 'setfacl'): HomeAccess {
  const out: HomeAccess = { granted: [], closed: [], fix: null };
  if (process.getuid?.() !== 0) return out;
  const ids = systemUser(SANDBOX_USER);
  const dir = existing(workspaces);
  for (let d = firstClosed(ids, [dir]); d; d = firstClosed(ids, [dir])) {
    if (out.granted.includes(d)) break;
    const r = spawnSync(setfacl, ['--modify', `u:${ids.uid}:x`, d], { encoding: 'utf8' });
    if (r.status !== 0) break;
    out.granted.push(d);
  }
  if (firstClosed(ids, [dir]) === null) return out;
  out.closed = closedByMode(dir, ids);
  if (!out.closed.length) out.closed = [firstClosed(ids, [dir])!];
  const list = out.closed.map(quote).join(' ');
  out.fix = `setfacl --modify u:${SANDBOX_USER}:x ${list}  (package acl; or: chmod o+x ${list})`;
  return out;
}

/**
 * What `up` says about it: a line per granted folder, a warning with the fix when one is needed.
 * Only the local runner runs commands as the sandbox user.
 */
export function homeAccessLines(cfg: { runner: { kind: string }; workspaces: string }, setfacl?: string): { info: string[]; warnings: string[] } {
  if (cfg.runner.kind !== 'local') return { info: [], warnings: [] };
  const workspaces = cfg.workspaces;
  let a: HomeAccess;
  try {
    a = ensureHomeAccess(workspaces, setfacl);
  } catch (e) {
    return { info: [], warnings: [`could not check that ${SANDBOX_USER} can reach ${workspaces}: ${(e as Error).message}`] };
  }
  const info = a.granted.map((d) => `let ${SANDBOX_USER} traverse ${d} (ACL u:${SANDBOX_USER}:x; no other user's access changed)`);
  const warnings = a.fix
    ? [`${SANDBOX_USER} cannot traverse ${a.closed.join(', ')} on the way to ${workspaces}, so sandboxed commands are refused; run: ${a.fix}. No restart needed: the next command checks again.`]
    : [];
  return { info, warnings };
}
