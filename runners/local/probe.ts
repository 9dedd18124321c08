/**
 * Whether the local runner can confine commands here, found once per runner: the workspaces root
 * made private, bubblewrap, prlimit (and pasta for network) looked up on the host, then one real
 * confined command tried (bwrap may be installed yet refused: no user namespaces, seccomp). What
 * is missing makes commands refused, or run unconfined where the operator allowed it
 * (AGENTSVC_ALLOW_UNCONFINED=1); Probe.check says which. onPath is the host tool lookup.
 */
import { accessSync, constants } from 'node:fs';
import { chmod, chown, mkdir, realpath, rm } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { grantTraverse } from '../../src/platform/lib/system-user.js';
import { type Owner, foldersRoot } from '../shared.js';
import type { ExecResult, RunnerCheck } from '../types.js';
import type { NetTools } from './net.js';
import { SANDBOX_USER } from './sandbox.js';

export function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter).concat(['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin'])) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

export interface Probe {
  bwrap: string | null;
  /** The workspaces root, real path. */
  root: string;
  check: RunnerCheck;
  /** Why commands are refused, when they are. */
  refusal?: string;
  net?: NetTools;
}

export interface ProbeSetup {
  /** AGENTSVC_HOME and the workspaces root (LocalRunnerOptions). */
  home: string;
  workspaces?: string;
  bwrapPath?: string | null;
  allowUnconfined?: boolean;
  network: boolean;
  prlimit: string | null;
  /** A root service (hostIdentity): commands run as the sandbox user, `owner`. */
  root: boolean;
  owner: Owner | undefined;
  /** Run `true` in `dir` as every command runs (confined by `p.bwrap`). */
  tryCommand(p: Probe, dir: string): Promise<ExecResult>;
}

export async function probeSandbox(s: ProbeSetup): Promise<Probe> {
  const ws = foldersRoot(s);
  // Private: only the service lists it. A root service's bwrap (nobody) must still traverse it to
  // bind a workspace (each workspace is 0700 and nobody's), hence 0711 then.
  const mode = s.root ? 0o711 : 0o700;
  await mkdir(ws, { recursive: true, mode });
  await chmod(ws, mode);
  const root = await realpath(ws);
  const fallback = (why: string): Probe => {
    if (s.allowUnconfined) {
      return {
        bwrap: null,
        root,
        check: { ok: true, warning: `UNCONFINED: ${why}; AGENTSVC_ALLOW_UNCONFINED=1 lets every command run as ${s.root ? 'nobody' : 'the service user'} with no sandbox` },
      };
    }
    const refusal = `${why}: commands are refused (install bubblewrap 0.8 or newer and allow user namespaces, or set AGENTSVC_ALLOW_UNCONFINED=1 to run them unconfined)`;
    return { bwrap: null, root, refusal, check: { ok: false, error: refusal } };
  };
  if (s.bwrapPath === null) return fallback('bubblewrap disabled');
  const bwrap = s.bwrapPath ?? onPath('bwrap');
  if (!bwrap) return fallback('bubblewrap not found');
  if (!s.prlimit) return fallback('prlimit (util-linux) not found, so no resource limits');
  let net: NetTools | undefined;
  if (s.network) {
    const pasta = onPath('pasta');
    if (!pasta) return fallback('AGENTSVC_RUNNER_NETWORK needs pasta (package passt) to reach the egress proxy');
    net = { pasta };
  }
  const p: Probe = { bwrap, root, net, check: { ok: true } };
  // Run the real thing once: bwrap may be installed yet refused (no user namespaces, seccomp).
  const tryIt = async () => {
    const dir = join(ws, '.probe');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (s.owner) await chown(dir, s.owner.uid, s.owner.gid);
    const r = await s.tryCommand(p, dir).catch((e) => ({ exitCode: null, signal: null, stderr: e.message }) as unknown as ExecResult);
    await rm(dir, { recursive: true, force: true });
    return r;
  };
  let r = await tryIt();
  if (r.exitCode !== 0 && s.owner) {
    // The sandbox user cannot reach the workspaces (e.g. under /root): let it traverse the
    // folders on the way, and only it (an ACL, or the folder's unused group). Never host root.
    try {
      const granted = grantTraverse(SANDBOX_USER, s.owner, [ws]);
      if (granted.length) r = await tryIt();
    } catch (e) {
      return fallback(`the sandbox user cannot reach ${root}: ${(e as Error).message}`);
    }
  }
  // bubblewrap's own loopback set-up in a new network namespace fails now and then on some
  // kernels (gVisor answers RTM_NEWADDR with ECHILD under load): once more before the verdict,
  // which is kept for the runner's life.
  if (r.exitCode !== 0 && /loopback: Failed/.test(r.stderr)) r = await tryIt();
  if (r.exitCode !== 0) return fallback(`bubblewrap not usable (${r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`})`);
  const as = s.owner ? ` (${SANDBOX_USER}, uid ${s.owner.uid}, on the host)` : '';
  p.check = {
    ok: true,
    summary: `commands confined by bubblewrap: no capabilities, uid 1000 in a user namespace${as}, only the workspace writable, ` +
      `${s.network ? 'network only through the egress proxy (host rules, private addresses refused)' : 'no network'}`,
  };
  return p;
}
