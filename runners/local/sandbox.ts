/**
 * What one confined command of the local runner sees, as bubblewrap arguments: a filesystem built
 * from nothing (system folders read-only, a handful of /etc files, fresh /tmp, /proc and /dev, the
 * user's workspace writable), no capabilities, an unprivileged uid in its own user namespace, its
 * own pid/ipc/uts (and, unless allowed, network) namespaces, and resource limits on every process.
 * Entries the path rules deny are covered by binds over the workspace (docs/policy-paths.md).
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { userInfo } from 'node:os';
import { systemUser } from '../../src/platform/lib/system-user.js';

/** uid/gid of commands inside the sandbox (the docker image's `agent` has the same). */
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
/** The system user bubblewrap runs as when the service is root (see hostIdentity): never root. */
export const SANDBOX_USER = 'agentsvc-sandbox';

/** Fixed environment of bwrap itself: nothing a user controls reaches a process outside the sandbox. */
export const BWRAP_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Bounds of every process of one command (RLIMIT_*); the pid namespace ends them all at exit. */
export interface SandboxLimits {
  /** Processes (threads count) in the command's own user namespace: a fork bomb stops here. */
  nproc: number;
  /** Largest file a process may write. */
  fileBytes: number;
  /** CPU seconds per process: a runaway loop in a background task ends. */
  cpuSeconds: number;
  /** Address space per process (virtual, not resident: generous so JIT runtimes still start). */
  addressSpaceBytes: number;
  /** Size of the private /tmp (tmpfs, so it is memory). */
  tmpBytes: number;
}

const GiB = 1024 * 1024 * 1024;
export const DEFAULT_LIMITS: SandboxLimits = {
  nproc: 512,
  fileBytes: 4 * GiB,
  cpuSeconds: 3600,
  addressSpaceBytes: 16 * GiB,
  tmpBytes: GiB / 2,
};

/** prlimit arguments that set soft and hard limits alike: the command cannot raise them again. */
export function limitArgs(prlimit: string, l: SandboxLimits): string[] {
  return [prlimit, `--nproc=${l.nproc}`, `--fsize=${l.fileBytes}`, `--cpu=${l.cpuSeconds}`, `--as=${l.addressSpaceBytes}`, '--core=0', '--'];
}

/**
 * The host identity commands run as. A non-root service can only give its own uid. A root service
 * hands bubblewrap to a dedicated system user, `agentsvc-sandbox` (made on first use, the way the
 * embedded PostgreSQL gets `postgres`): the sandbox's uid maps to that unprivileged host uid, which
 * owns the workspaces and nothing of the service (files a command creates are its, an escape lands
 * as it, and RLIMIT_NPROC applies, which the kernel never enforces for host root). Not nobody: a
 * uid other daemons share would let them into the workspaces. The workspace is handed to that uid
 * (Computer.owner).
 */
export function hostIdentity(): { uid: number; gid: number; root: boolean } {
  const root = process.getuid?.() === 0;
  if (root) return { ...systemUser(SANDBOX_USER), root };
  const u = userInfo();
  return { uid: u.uid, gid: u.gid, root };
}

/**
 * /etc entries a computer needs (name resolution, TLS roots, loader cache, shell profile, time zone).
 * Not the rest: /etc can hold secrets (shadow, ssh host keys, ssl/private, service configs).
 */
const ETC = [
  'hosts', 'resolv.conf', 'nsswitch.conf', 'host.conf', 'gai.conf', 'services', 'protocols', 'networks',
  'ssl/certs', 'ssl/openssl.cnf', 'ca-certificates', 'ca-certificates.conf', 'alternatives',
  'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'localtime', 'timezone', 'locale.alias',
  'profile', 'profile.d', 'bash.bashrc', 'inputrc', 'shells', 'terminfo', 'mime.types', 'magic',
  'os-release', 'debian_version', 'lsb-release', 'gitconfig', 'python3', 'pip.conf',
];

/** Top-level system folders: merged-/usr hosts have symlinks for most of them, kept as such. */
const SYSTEM = ['usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

function systemArgs(): string[] {
  const args: string[] = [];
  for (const name of SYSTEM) {
    const st = (() => {
      try {
        return lstatSync(`/${name}`);
      } catch {
        return null;
      }
    })();
    if (!st) continue;
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(`/${name}`), `/${name}`);
    else if (st.isDirectory()) args.push('--ro-bind', `/${name}`, `/${name}`);
  }
  return args;
}

export function passwdFile(home: string): string {
  return `root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:${SANDBOX_UID}:${SANDBOX_GID}:agent:${home}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`;
}
export function groupFile(): string {
  return `root:x:0:\nagent:x:${SANDBOX_GID}:\nnogroup:x:65534:\n`;
}

export interface ConfineSpec {
  /** Where the workspace appears inside (the local runner keeps the host path: Computer.root). */
  root: string;
  /** Working directory inside. */
  cwd: string;
  limits: SandboxLimits;
  /** fds in the child: /etc/passwd and /etc/group contents, the workspace folder. */
  fds: { passwd: number; group: number; workspace: number };
  env: [string, string][];
  /** Extra bwrap options (e.g. --info-fd/--block-fd for the network helper). */
  extra?: string[];
  /** Binds over denied entries (docs/policy-paths.md), mounted over the workspace. */
  covers?: string[];
}

export function confineArgs(s: ConfineSpec): string[] {
  const a = ['--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_GID), '--disable-userns'];
  // Always an own network namespace: network access, when allowed, is added to it from outside.
  a.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--unshare-cgroup-try', '--hostname', 'computer');
  a.push('--new-session', '--die-with-parent', '--cap-drop', 'ALL');
  a.push(...systemArgs());
  a.push('--dir', '/etc');
  for (const e of ETC) a.push('--ro-bind-try', `/etc/${e}`, `/etc/${e}`);
  a.push('--perms', '0644', '--ro-bind-data', String(s.fds.passwd), '/etc/passwd', '--perms', '0644', '--ro-bind-data', String(s.fds.group), '/etc/group');
  a.push('--proc', '/proc', '--dev', '/dev', '--size', String(s.limits.tmpBytes), '--tmpfs', '/tmp');
  a.push('--dir', '/var', '--symlink', '../tmp', '/var/tmp', '--dir', '/run');
  a.push('--bind-fd', String(s.fds.workspace), s.root, ...(s.covers ?? []), '--chdir', s.cwd);
  // The root built above (/etc, /var, the folders leading to the workspace) is read-only too.
  a.push('--remount-ro', '/');
  a.push('--clearenv');
  for (const [k, v] of s.env) a.push('--setenv', k, v);
  a.push(...(s.extra ?? []));
  return a;
}
