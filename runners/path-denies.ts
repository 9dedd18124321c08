/**
 * Path rules as the sandbox holds them (docs/policy-paths.md): the denied entries of a user's
 * computer that exist when a process starts, found by walking each session folder against the
 * globs of its path denies. Each runner then covers them (runners/local: bubblewrap binds per
 * command; runners/docker: the container's mounts), so no process inside opens what is under them.
 */
import { closeSync, constants, type Dirent, openSync, readlinkSync } from 'node:fs';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { SandboxRefusal } from './shared.js';
import type { PathDeny, PathDenySet, PathPolicy } from './types.js';

/** One entry to cover, relative to the computer's root (the user folder): `session/secrets`. */
export interface Covered {
  rel: string;
  dir: boolean;
  /** `all`: an empty, unreadable node over it; `write`: itself, read-only. */
  access: 'all' | 'write';
}

/** Entries looked at per start, at most: past it the command is refused (a bound, not a guess). */
export const MAX_DENY_WALK = 200_000;
/** A child name no rule is written for: a folder whose any child is denied is covered itself. */
const PROBE = '.agentsvc-any-entry';
const SAFE_SESSION = /^[A-Za-z0-9_-]{1,100}$/;

interface Compiled {
  test: (p: string) => boolean;
  /** The literal folder the glob starts with ('' when it starts with a wildcard): only there can it match. */
  base: string;
  access: 'all' | 'write';
}

const cache = new Map<string, Compiled>();
function compile(d: PathDeny): Compiled {
  const key = `${d.access}:${d.glob}`;
  let c = cache.get(key);
  if (!c) {
    const glob = d.glob.replace(/^\.\//, '');
    c = { test: picomatch(glob, { dot: true }), base: picomatch.scan(glob).base, access: d.access };
    if (cache.size > 5000) cache.clear();
    cache.set(key, c);
  }
  return c;
}

/** Could a glob starting at folder `base` match something at or below folder `rel`? */
const reaches = (base: string, rel: string) => base === '' || rel === '' || base === rel || base.startsWith(`${rel}/`) || rel.startsWith(`${base}/`);

/**
 * The entries of the computer at `userRoot` that the deny set covers. Links are never followed
 * nor covered themselves: what a link names is covered where it really is, when a rule names that.
 */
export async function deniedEntries(userRoot: string, set: PathDenySet, names?: string[], max = MAX_DENY_WALK): Promise<Covered[]> {
  const every = set.every.map(compile);
  if (!every.length && !Object.keys(set.sessions).length) return [];
  const out: Covered[] = [];
  const budget = { left: max };
  for (const name of names ?? (await sessionFolders(userRoot))) {
    const globs = [...every, ...(set.sessions[name] ?? []).map(compile)];
    if (globs.length && SAFE_SESSION.test(name)) await walk(join(userRoot, name), name, '', globs, out, budget);
  }
  return out;
}

/** The session folders of a computer (its root's folders with a session id's shape). */
export async function sessionFolders(userRoot: string): Promise<string[]> {
  const entries = await readdir(userRoot, { withFileTypes: true }).catch(() => [] as Dirent[]);
  return entries.filter((e) => e.isDirectory() && SAFE_SESSION.test(e.name)).map((e) => e.name);
}

/** What the path denies of `userId`, asked of `policy` for the session folders there are, cover now. */
export async function coveredNow(userRoot: string, userId: string, policy: PathPolicy): Promise<Covered[]> {
  const names = await sessionFolders(userRoot);
  return deniedEntries(userRoot, await policy(userId, names), names);
}

async function walk(host: string, session: string, rel: string, globs: Compiled[], out: Covered[], budget: { left: number }): Promise<void> {
  const entries = await readdir(rel ? join(host, rel) : host, { withFileTypes: true }).catch(() => [] as Dirent[]);
  for (const e of entries) {
    if (--budget.left < 0) {
      throw new SandboxRefusal(
        'SANDBOX_UNAVAILABLE',
        `the path rules could not be applied: the workspace has more than ${MAX_DENY_WALK} entries where a path rule could match; narrow the rules (e.g. secrets/** rather than **/*.key) or remove files`,
      );
    }
    const path = rel ? `${rel}/${e.name}` : e.name;
    const dir = e.isDirectory();
    if (!dir && !e.isFile()) continue;
    const live = globs.filter((g) => reaches(g.base, path));
    if (!live.length) continue;
    const hit = live.filter((g) => g.test(path) || (dir && g.test(`${path}/${PROBE}`)));
    const access = hit.some((g) => g.access === 'all') ? 'all' : hit.length ? 'write' : null;
    if (access) out.push({ rel: `${session}/${path}`, dir, access });
    // A folder covered whole is not entered; one read-only may still hold entries denied whole.
    if (dir && access !== 'all') await walk(host, session, path, access ? live.filter((g) => g.access === 'all') : live, out, budget);
  }
}

/** Folders listed before what they hold, so an inner cover is mounted over an outer read-only one. */
export function outerFirst(list: Covered[]): Covered[] {
  return [...list].sort((a, b) => a.rel.split('/').length - b.rel.split('/').length || (a.rel < b.rel ? -1 : 1));
}

const O_PATH = 0o10000000;

/**
 * Open `rel` under `root` (O_PATH, not following a link) and check through the kernel that the
 * descriptor is that very path: a link swapped into the path meanwhile refuses the command. The
 * caller closes the descriptor (closeSync).
 */
export function openExact(root: string, rel: string): number {
  const path = join(root, rel);
  const fd = openSync(path, O_PATH | constants.O_NOFOLLOW);
  let real: string | null = null;
  try {
    real = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {}
  if (real !== path) {
    closeSync(fd);
    throw new SandboxRefusal('SANDBOX_UNAVAILABLE', `the path rules could not be applied: ${rel} changed while the command started; run it again`);
  }
  return fd;
}

/** Empty, unreadable nodes (mode 000) bound over denied entries: one file, one folder, in `dir`. */
export async function emptyNodes(dir: string): Promise<{ file: string; dir: string }> {
  const file = join(dir, '.denied-file');
  const folder = join(dir, '.denied-dir');
  // Traversable: a root service's bubblewrap runs as the sandbox user and binds from here.
  await mkdir(dir, { recursive: true, mode: 0o711 });
  await writeFile(file, '', { flag: 'a' });
  await mkdir(folder, { recursive: true });
  await chmod(file, 0);
  await chmod(folder, 0);
  return { file, dir: folder };
}
